// deploy/grafana/cairn-dashboard.json and deploy/prometheus/alerts.yml name
// only metrics a running job exposes (or metrics of issues not built yet,
// listed below with the reason), the dashboard has the panels operators
// need, and docs/metrics.md documents every cairn_* metric a job exposes.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/tools/observed_job.h"
#include "tests/tools/promtool_util.h"

namespace cairn {
namespace {

const std::string kSource = CAIRN_SOURCE_DIR;

// Metrics the dashboard or the alerts use before the daemons export them.
// Keep it short: remove an entry when its issue lands (the test fails until
// then if the metric appears).
const std::map<std::string, std::string> kNotYetBuilt = {};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json Dashboard() {
  return nlohmann::json::parse(ReadFile(kSource + "/deploy/grafana/cairn-dashboard.json"));
}

// Every PromQL expression of the dashboard's panels.
std::vector<std::string> DashboardExpressions(const nlohmann::json& dashboard) {
  std::vector<std::string> exprs;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    if (panel["type"] == "row") continue;
    for (const nlohmann::json& target : panel["targets"]) exprs.push_back(target["expr"]);
  }
  return exprs;
}

std::vector<std::string> AlertExpressions() {
  std::vector<std::string> exprs;
  const YAML::Node rules = YAML::LoadFile(kSource + "/deploy/prometheus/alerts.yml");
  for (const YAML::Node& group : rules["groups"]) {
    for (const YAML::Node& rule : group["rules"]) exprs.push_back(rule["expr"].as<std::string>());
  }
  return exprs;
}

// The metric names of every sample every process of `job` exposes.
std::set<std::string> ExposedNames(testing::ObservedJob& job) {
  std::set<std::string> names;
  for (const testing::MetricsEndpoint& e : job.endpoints()) {
    INFO(e.role << " " << e.id << " at 127.0.0.1:" << e.port);
    absl::StatusOr<std::string> body = testing::HttpGet(e.port, "/metrics");
    REQUIRE(body.ok());
    auto samples = testing::ParseExposition(*body);
    INFO(samples.status().message());
    REQUIRE(samples.ok());
    for (const testing::Sample& s : *samples) names.insert(s.name);
  }
  return names;
}

TEST_CASE("the dashboard is valid JSON with the panels operators need", "[tools][grafana]") {
  const nlohmann::json dashboard = Dashboard();
  CHECK(dashboard["uid"] == "cairn-overview");
  std::set<std::string> titles;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    titles.insert(panel["title"].get<std::string>());
    if (panel["type"] == "row") continue;
    INFO(panel["title"]);
    CHECK(panel["datasource"]["uid"] == "${datasource}");
    REQUIRE(panel["targets"].size() >= 1);
    for (const nlohmann::json& target : panel["targets"]) {
      CHECK_FALSE(target["expr"].get<std::string>().empty());
    }
  }
  for (const char* needed :
       {"Examples/s per worker", "Step time split", "Training loss", "Test accuracy",
        "Staleness: clock spread", "Pull wait", "Push bytes/s per server",
        "Pull bytes/s per server", "Memory per server", "Failovers and lease expirations",
        "Checkpoint age"}) {
    CHECK(titles.count(needed) == 1);
  }
}

TEST_CASE("the metric-name scanner finds metric names, not label names", "[tools][grafana]") {
  CHECK(testing::CairnMetricNames(
            R"(sum by (cairn_job) (rate(cairn_a_total{cairn_x="cairn_y", m=~"cairn_z"}[1m])))"
            R"( / on(cairn_k) cairn_b == 0)") == std::set<std::string>{"cairn_a_total", "cairn_b"});
}

TEST_CASE("every cairn_* metric in the dashboard and alerts exists on a running job",
          "[tools][grafana][integration]") {
  std::set<std::string> used;
  for (const std::string& e : DashboardExpressions(Dashboard())) {
    for (const std::string& n : testing::CairnMetricNames(e)) used.insert(n);
  }
  for (const std::string& e : AlertExpressions()) {
    for (const std::string& n : testing::CairnMetricNames(e)) used.insert(n);
  }
  REQUIRE(used.size() >= 15);  // the scanner found the expressions' metrics

  auto job = testing::ObservedJob::Start("dashboard", 2);
  INFO(job.status().message());
  REQUIRE(job.ok());
  const std::set<std::string> exposed = ExposedNames(**job);
  for (const std::string& name : used) {
    INFO(name);
    CHECK((exposed.count(name) == 1 || kNotYetBuilt.count(name) == 1));
  }
  for (const auto& [name, reason] : kNotYetBuilt) {
    INFO(name << " is exposed now: remove it from kNotYetBuilt (" << reason << ")");
    CHECK(exposed.count(name) == 0);
    CHECK(used.count(name) == 1);  // listed only while something uses it
  }
  for (const char* process : {"process_resident_memory_bytes", "process_cpu_seconds_total"}) {
    CHECK(exposed.count(process) == 1);
  }
}

TEST_CASE("docs/metrics.md documents every cairn_* metric a running job exposes",
          "[tools][metrics][integration]") {
  const std::string docs = ReadFile(kSource + "/docs/metrics.md");
  auto job = testing::ObservedJob::Start("metrics_docs", 1);
  INFO(job.status().message());
  REQUIRE(job.ok());
  int checked = 0;
  for (std::string name : ExposedNames(**job)) {
    if (name.rfind("cairn_", 0) != 0) continue;
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {  // histogram series
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          docs.find("`" + name + "`") == std::string::npos) {
        name.resize(name.size() - suffix.size());
      }
    }
    INFO(name);
    CHECK(docs.find("`" + name + "`") != std::string::npos);
    ++checked;
  }
  CHECK(checked >= 20);
}

}  // namespace
}  // namespace cairn
