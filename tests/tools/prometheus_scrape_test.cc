// A real Prometheus (Debian's package) scraping a training job through
// deploy/prometheus/prometheus-local.yml and a file_sd targets file in the
// documented format: every target is up; server push rate, worker
// examples/s and staleness series exist and are non-zero while training;
// the alert rules load and evaluate; every dashboard expression runs, and
// returns data when the metrics it names exist.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "tests/testing/process.h"
#include "tests/tools/observed_job.h"
#include "tests/tools/promtool_util.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
const std::string kSource = CAIRN_SOURCE_DIR;

std::string PercentEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrCat("%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

// GET on Prometheus's HTTP API; the parsed JSON, or null on any failure.
nlohmann::json Api(int port, const std::string& path) {
  absl::StatusOr<std::string> body = testing::HttpGet(port, path);
  if (!body.ok()) return nullptr;
  return nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json Query(int port, const std::string& promql) {
  return Api(port, "/api/v1/query?query=" + PercentEncode(promql));
}

// The value of a one-element instant vector, or -1 when there is none.
double Scalar(const nlohmann::json& response) {
  if (!response.is_object() || response["status"] != "success") return -1;
  const nlohmann::json& result = response["data"]["result"];
  if (result.size() != 1) return -1;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Polls `promql` until its single value satisfies `ok`, or fails after `wait`.
double WaitFor(int port, const std::string& promql, bool (*ok)(double), absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  double value = -1;
  while (absl::Now() < deadline) {
    value = Scalar(Query(port, promql));
    if (ok(value)) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  FAIL("no good value of " << promql << " within " << absl::FormatDuration(wait)
                           << "; last value " << value);
  return value;
}

TEST_CASE("Prometheus scrapes a training job through the shipped config and file_sd targets",
          "[tools][prometheus][integration][slow]") {
  if (!testing::HaveTool(testing::kPrometheus)) {
    FAIL(testing::kPrometheus
         << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
  auto job = testing::ObservedJob::Start("prometheus_scrape", 2);
  INFO(job.status().message());
  REQUIRE(job.ok());
  INFO((*job)->Logs());

  // The layout the launcher writes: config and rules copied into a job
  // directory, the targets file in targets/.
  const std::string dir = (*job)->cluster().dir() + "/prometheus";
  fs::create_directories(dir + "/targets");
  fs::copy_file(kSource + "/deploy/prometheus/prometheus-local.yml", dir + "/prometheus-local.yml");
  fs::copy_file(kSource + "/deploy/prometheus/alerts.yml", dir + "/alerts.yml");
  nlohmann::json targets = nlohmann::json::array();
  for (const testing::MetricsEndpoint& e : (*job)->endpoints()) {
    targets.push_back({{"targets", {absl::StrCat("127.0.0.1:", e.port)}},
                       {"labels", {{"job", "cairn"}, {"role", e.role}}}});
  }
  REQUIRE(testing::WriteFile(dir + "/targets/cairn.json", targets.dump(2)).ok());

  const absl::StatusOr<int> free_port = testing::FreeLoopbackPort();
  REQUIRE(free_port.ok());
  const int port = *free_port;
  auto prometheus = testing::Subprocess::Spawn(
      testing::kPrometheus,
      {"--config.file=" + dir + "/prometheus-local.yml", "--storage.tsdb.path=" + dir + "/data",
       absl::StrCat("--web.listen-address=127.0.0.1:", port)},
      dir + "/prometheus");
  REQUIRE(prometheus.ok());
  INFO("prometheus stderr:\n" << (*prometheus)->ReadStderr());

  REQUIRE((*job)->endpoints().size() == 4);  // coordinator, 2 servers, worker
  CHECK(WaitFor(port, R"(count(up{job="cairn"} == 1))", [](double v) { return v == 4; },
                absl::Seconds(60)) == 4);
  CHECK(WaitFor(port, R"(sum(rate(cairn_shard_received_bytes_total{method="Push"}[30s])))",
                [](double v) { return v > 0; }, absl::Seconds(60)) > 0);
  CHECK(WaitFor(port, "sum(rate(cairn_worker_examples_total[30s]))",
                [](double v) { return v > 0; }, absl::Seconds(60)) > 0);
  CHECK(WaitFor(port, "count(cairn_shard_clock_spread)", [](double v) { return v == 2; },
                absl::Seconds(30)) == 2);
  CHECK(WaitFor(port, "min(cairn_shard_min_clock)", [](double v) { return v > 0; },
                absl::Seconds(30)) > 0);

  // The rules file loaded, and every rule evaluated without error.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  nlohmann::json rules;
  bool all_ok = false;
  while (!all_ok && absl::Now() < deadline) {
    rules = Api(port, "/api/v1/rules");
    all_ok = rules.is_object() && rules["data"]["groups"].size() == 1 &&
             rules["data"]["groups"][0]["rules"].size() == 5;
    if (all_ok) {
      for (const nlohmann::json& rule : rules["data"]["groups"][0]["rules"]) {
        all_ok = all_ok && rule["health"] == "ok";
      }
    }
    if (!all_ok) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  INFO(rules.dump(1));
  CHECK(all_ok);

  // Every dashboard expression, with Grafana's variables filled in, is valid
  // PromQL; those whose metrics all exist return data.
  const nlohmann::json known = Api(port, "/api/v1/label/__name__/values");
  REQUIRE(known["status"] == "success");
  const std::set<std::string> names = known["data"].get<std::set<std::string>>();
  std::ifstream file(kSource + "/deploy/grafana/cairn-dashboard.json");
  const nlohmann::json dashboard = nlohmann::json::parse(file);
  int with_data = 0;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    if (panel["type"] == "row") continue;
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = absl::StrReplaceAll(
          target["expr"].get<std::string>(), {{"$__rate_interval", "30s"}, {"$job", ".*"}});
      INFO(panel["title"] << ": " << expr);
      nlohmann::json r = Query(port, expr);
      REQUIRE(r.is_object());
      CHECK(r["status"] == "success");
      bool exists = true;
      for (const std::string& m : testing::CairnMetricNames(expr)) exists &= names.count(m) == 1;
      if (exists) {
        // A rate needs two scrapes of a series born late in the job; on a
        // loaded machine give it a few more scrape intervals.
        for (int retry = 0; retry < 10 && r["data"]["result"].empty(); ++retry) {
          std::this_thread::sleep_for(std::chrono::seconds(1));
          r = Query(port, expr);
        }
        CHECK(r["data"]["result"].size() >= 1);
        ++with_data;
      }
    }
  }
  CHECK(with_data >= 15);
}

}  // namespace
}  // namespace cairn
