// cairn-launch's Prometheus files: the file_sd targets in the format
// docs/metrics.md documents, the copies of the shipped config, and the
// Prometheus command line.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "tests/testing/process.h"
#include "tools/launch/port_file.h"
#include "tools/launch/prometheus_sidecar.h"
#include "tools/launch/targets_file.h"

namespace cairn::launch {
namespace {

namespace fs = std::filesystem;

TEST_CASE("targets are grouped by role, in start order, with job and role labels",
          "[tools][launch]") {
  CHECK(TargetsJson({}) == nlohmann::json::array());
  const nlohmann::json groups = TargetsJson({{"coordinator", "127.0.0.1:1"},
                                             {"server", "127.0.0.1:2"},
                                             {"server", "127.0.0.1:3"},
                                             {"worker", "127.0.0.1:4"}});
  CHECK(groups == nlohmann::json::parse(R"([
    {"targets": ["127.0.0.1:1"], "labels": {"job": "cairn", "role": "coordinator"}},
    {"targets": ["127.0.0.1:2", "127.0.0.1:3"], "labels": {"job": "cairn", "role": "server"}},
    {"targets": ["127.0.0.1:4"], "labels": {"job": "cairn", "role": "worker"}}
  ])"));
}

TEST_CASE("a target's address comes from the metrics URL", "[tools][launch]") {
  CHECK(*TargetAddress("http://127.0.0.1:40123/metrics") == "127.0.0.1:40123");
  CHECK(*TargetAddress("http://[::1]:9/metrics") == "[::1]:9");
  // metrics.tls: the same address; the scheme is the scrape config's.
  CHECK(*TargetAddress(MetricsUrl("127.0.0.1", 40123, /*https=*/true)) == "127.0.0.1:40123");
  CHECK(MetricsUrl("::1", 9, /*https=*/true) == "https://[::1]:9/metrics");
  CHECK(MetricsUrl("127.0.0.1", 9) == "http://127.0.0.1:9/metrics");
  for (const char* bad : {"127.0.0.1:1/metrics", "http://127.0.0.1/metrics", "ftp://h:1/metrics",
                          "http://127.0.0.1:0/metrics", "http://:5/metrics", "(not reported)"}) {
    INFO(bad);
    const absl::StatusOr<std::string> address = TargetAddress(bad);
    CHECK(address.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("the targets file is rewritten whole as processes come up", "[tools][launch]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("launch_targets");
  REQUIRE(dir.ok());
  const PrometheusFiles files = PrometheusFilesIn(*dir);
  CHECK(files.targets == *dir + "/prometheus/targets/cairn.json");
  CHECK(files.config == *dir + "/prometheus/prometheus-local.yml");
  TargetsFile targets(files.targets);
  REQUIRE(targets.Write().ok());  // creates targets/
  CHECK(nlohmann::json::parse(testing::ReadFileOrEmpty(files.targets)) == nlohmann::json::array());
  REQUIRE(targets.Add({"coordinator", "127.0.0.1:1"}).ok());
  REQUIRE(targets.Add({"server", "127.0.0.1:2"}).ok());
  const nlohmann::json written = nlohmann::json::parse(testing::ReadFileOrEmpty(files.targets));
  CHECK(written == TargetsJson(targets.targets()));
  CHECK(written.size() == 2);
  // Only the file itself is in targets/: the temporary one was renamed.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(fs::path(files.targets).parent_path())) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("the shipped scrape config and alert rules are copied beside the targets",
          "[tools][launch]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("launch_deploy");
  REQUIRE(dir.ok());
  absl::StatusOr<std::string> deploy = FindDeployDir("");  // the source tree's deploy/
  REQUIRE(deploy.ok());
  CHECK(*deploy == std::string(CAIRN_SOURCE_DIR) + "/deploy");
  const PrometheusFiles files = PrometheusFilesIn(*dir);
  REQUIRE(CopyPrometheusConfig(*deploy, files).ok());
  CHECK(testing::ReadFileOrEmpty(files.config) ==
        testing::ReadFileOrEmpty(*deploy + "/prometheus/prometheus-local.yml"));
  CHECK(testing::ReadFileOrEmpty(files.rules) ==
        testing::ReadFileOrEmpty(*deploy + "/prometheus/alerts.yml"));
  CHECK(fs::is_directory(*dir + "/prometheus/targets"));

  const absl::StatusOr<std::string> missing = FindDeployDir(*dir + "/nowhere");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(absl::StrContains(missing.status().message(),
                          *dir + "/nowhere/prometheus/prometheus-local.yml"));
  CHECK(absl::StrContains(missing.status().message(), "--deploy-dir"));
}

TEST_CASE("with metrics.tls the copied scrape config scrapes the job over HTTPS with its CA",
          "[tools][launch]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("launch_https_scrape");
  REQUIRE(dir.ok());
  absl::StatusOr<std::string> deploy = FindDeployDir("");
  REQUIRE(deploy.ok());
  const PrometheusFiles files = PrometheusFilesIn(*dir);
  REQUIRE(CopyPrometheusConfig(*deploy, files).ok());
  // A relative CA path is made absolute: Prometheus would read it from the
  // config's directory.
  const std::string cwd = fs::current_path().string();
  const std::string shipped = ScrapeConfigIn(*deploy);
  CHECK(shipped == *deploy + "/prometheus/prometheus-local.yml");
  REQUIRE(CheckScrapeJob(shipped).ok());
  REQUIRE(ScrapeOverHttps(shipped, files.config, "certs/ca.pem").ok());
  const std::string text = testing::ReadFileOrEmpty(files.config);
  INFO(text);
  CHECK(absl::StartsWith(text, "# " + shipped + ", copied by cairn-launch"));
  CHECK(absl::StrContains(text, "scheme: https"));
  CHECK(absl::StrContains(text, "ca_file: " + cwd + "/certs/ca.pem"));
  // The rest of the shipped config is kept: the targets and the relabeling.
  CHECK(absl::StrContains(text, "targets/*.json"));
  CHECK(absl::StrContains(text, "exported_role"));
  CHECK(absl::StrContains(text, "alerts.yml"));
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    // Prometheus's own check of the file (it reads the rules beside it).
    auto check = testing::Subprocess::Spawn("/usr/bin/promtool",
                                            {"check", "config", "--syntax-only", files.config},
                                            *dir + "/promtool");
    REQUIRE(check.ok());
    auto ended = (*check)->Wait(absl::Seconds(60));
    REQUIRE(ended.ok());
    INFO((*check)->ReadStdout() << (*check)->ReadStderr());
    CHECK(ended->code == 0);
  }

  // A config without the job's scrape job, or not YAML: named, left alone.
  const std::string other = *dir + "/other.yml";
  REQUIRE(testing::WriteFile(other, "scrape_configs:\n  - job_name: node\n").ok());
  const std::string copy = *dir + "/copy.yml";
  const absl::Status no_job = ScrapeOverHttps(other, copy, "/ca.pem");
  CHECK(no_job.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(no_job.message(), other + " has no scrape job named \"cairn\""));
  CHECK(CheckScrapeJob(other) == no_job);
  CHECK(testing::ReadFileOrEmpty(other) == "scrape_configs:\n  - job_name: node\n");
  CHECK_FALSE(fs::exists(copy));
  REQUIRE(testing::WriteFile(other, "scrape_configs: [\n").ok());
  const absl::Status bad = ScrapeOverHttps(other, copy, "/ca.pem");
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.message(), other + ": not a Prometheus configuration"));
  CHECK_FALSE(fs::exists(copy));
}

TEST_CASE("Prometheus runs on loopback with its data in the work directory", "[tools][launch]") {
  const PrometheusFiles files = PrometheusFilesIn("/w");
  CHECK(PrometheusArgs(files, 9091) ==
        std::vector<std::string>{"--config.file=/w/prometheus/prometheus-local.yml",
                                 "--storage.tsdb.path=/w/prometheus/data",
                                 "--web.listen-address=127.0.0.1:9091", "--log.level=warn"});
  const absl::StatusOr<int> port = FreeLoopbackPort();
  REQUIRE(port.ok());
  CHECK(*port > 0);
  CHECK_FALSE(PrometheusReady(*port, absl::Milliseconds(200)));  // nothing listens there
  CHECK(CheckPrometheusInstalled("/nonexistent/prometheus").code() ==
        absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace cairn::launch
