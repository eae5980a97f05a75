// deploy/prometheus/ against Debian's promtool: the alert rules load and
// their unit tests (alerts_test.yml) pass; both scrape configs are valid; the
// local config reads file_sd targets in the documented format.
//
// Without promtool (tools/setup installs the prometheus package) each test
// warns and passes without checking.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "tests/testing/process.h"
#include "tests/tools/promtool_util.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
using testing::kPromtool;

const std::string kDeploy = std::string(CAIRN_SOURCE_DIR) + "/deploy/prometheus";

// tools/setup installs promtool: without it the test fails.
void RequirePromtool() {
  if (!testing::HaveTool(kPromtool)) {
    FAIL(kPromtool << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
}

testing::CommandResult Promtool(const std::vector<std::string>& args) {
  std::vector<std::string> command = {kPromtool};
  command.insert(command.end(), args.begin(), args.end());
  auto result = testing::RunCommand(command);
  INFO(result.status().message());
  REQUIRE(result.ok());
  return *result;
}

// A fresh directory holding copies of prometheus-local.yml and alerts.yml,
// as the launcher lays them out for a job.
std::string LocalConfigDir() {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("prometheus_config");
  REQUIRE(dir.ok());
  fs::copy_file(kDeploy + "/prometheus-local.yml", *dir + "/prometheus-local.yml");
  fs::copy_file(kDeploy + "/alerts.yml", *dir + "/alerts.yml");
  fs::create_directory(*dir + "/targets");
  return *dir;
}

TEST_CASE("promtool accepts the alert rules", "[tools][prometheus]") {
  RequirePromtool();
  const testing::CommandResult r = Promtool({"check", "rules", kDeploy + "/alerts.yml"});
  INFO(r.output());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output(), Catch::Contains("SUCCESS: 5 rules found"));
}

TEST_CASE("the alert rules fire when and only when their unit tests expect",
          "[tools][prometheus]") {
  RequirePromtool();
  const testing::CommandResult r = Promtool({"test", "rules", kDeploy + "/alerts_test.yml"});
  INFO(r.output());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output(), Catch::Contains("SUCCESS"));
}

TEST_CASE("the local scrape config reads file_sd targets in the documented format",
          "[tools][prometheus]") {
  RequirePromtool();
  const std::string dir = LocalConfigDir();
  REQUIRE(testing::WriteFile(dir + "/targets/cairn.json", R"([
  {"targets": ["127.0.0.1:40123"], "labels": {"job": "cairn", "role": "coordinator"}},
  {"targets": ["127.0.0.1:40125", "127.0.0.1:40127"], "labels": {"job": "cairn", "role": "server"}}
])")
              .ok());
  const testing::CommandResult good = Promtool({"check", "config", dir + "/prometheus-local.yml"});
  INFO(good.output());
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output(), Catch::Contains("SUCCESS: 1 rule files found"));
  CHECK_FALSE(absl::StrContains(good.output(), "WARNING"));  // the targets file was found

  // promtool reads the targets: one object instead of a list is rejected.
  REQUIRE(testing::WriteFile(dir + "/targets/cairn.json",
                             R"({"targets": ["127.0.0.1:40125"], "labels": {"role": "server"}})")
              .ok());
  const testing::CommandResult bad = Promtool({"check", "config", dir + "/prometheus-local.yml"});
  INFO(bad.output());
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output(), Catch::Contains("targets/*.json"));
}

TEST_CASE("the Kubernetes scrape config is valid", "[tools][prometheus]") {
  RequirePromtool();
  const std::string path = kDeploy + "/prometheus-kubernetes.yml";
  const testing::CommandResult direct = Promtool({"check", "config", path});
  if (direct.exit_code == 0) {
    CHECK_THAT(direct.output(), Catch::Contains("SUCCESS"));
    return;
  }
  // Debian builds Prometheus without Kubernetes discovery, so its promtool
  // rejects the kubernetes_sd_configs key itself. Check everything else
  // (relabel rules, regexes, rule files) with static targets in its place.
  INFO(direct.output());
  REQUIRE_THAT(direct.output(), Catch::Contains("field kubernetes_sd_configs not found"));
  WARN("this promtool lacks Kubernetes discovery; checking the rest of " << path);
  YAML::Node config = YAML::LoadFile(path);
  YAML::Node job = config["scrape_configs"][0];
  REQUIRE(job["kubernetes_sd_configs"][0]["role"].as<std::string>() == "pod");
  job.remove("kubernetes_sd_configs");
  YAML::Node targets;
  targets["targets"].push_back("127.0.0.1:9100");
  job["static_configs"].push_back(targets);

  const std::string dir = LocalConfigDir();
  YAML::Emitter out;
  out << config;
  fs::create_directories(dir + "/kubernetes");
  fs::copy_file(kDeploy + "/alerts.yml", dir + "/kubernetes/alerts.yml",
                fs::copy_options::overwrite_existing);
  REQUIRE(testing::WriteFile(dir + "/kubernetes/prometheus.yml", out.c_str()).ok());
  const testing::CommandResult r =
      Promtool({"check", "config", dir + "/kubernetes/prometheus.yml"});
  INFO(r.output());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output(), Catch::Contains("SUCCESS: 1 rule files found"));
}

}  // namespace
}  // namespace cairn
