// Members waiting at the start-up barrier long-poll the coordinator for the
// map: servers that registered while the job waits for its workers ask for a
// newer map than the last one they were sent, so each watch waits (up to its
// 1 s timeout) instead of returning at once. Before, a server watched from
// version 0 (it installs no map before the barrier) and the coordinator
// answered thousands of watches a second, each daemon spinning at 40-75% of
// a core (docs/benchmarks.md, "Waiting at the start-up barrier").
#include <catch2/catch.hpp>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"

namespace cairn {
namespace {

using testing::TestCluster;

// The value of `series` (a full name with labels) in a /metrics body; -1
// when absent.
double MetricValue(const std::string& body, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double v = 0;
    if (absl::SimpleAtod(line, &v)) return v;
  }
  return -1;
}

TEST_CASE("servers waiting at the start-up barrier long-poll the map", "[integration][barrier]") {
  auto cluster = TestCluster::Start("barrier_wait", R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 4
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 60s
consistency:
  mode: bsp
tables:
  - name: w
    kind: dense
    shape: [64]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)", 2);
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  INFO("logs in " << c.dir());
  const std::string watches = "cairn_coordinator_requests_total{method=\"WatchPartitionMap\"}";

  absl::StatusOr<std::string> before = testing::HttpGet(c.coordinator_metrics_port(), "/metrics");
  REQUIRE(before.ok());
  const absl::Duration wait = absl::Seconds(4);
  absl::SleepFor(wait);  // no worker comes: both servers wait at the barrier
  absl::StatusOr<std::string> after = testing::HttpGet(c.coordinator_metrics_port(), "/metrics");
  REQUIRE(after.ok());
  const double begin = MetricValue(*before, watches);
  const double end = MetricValue(*after, watches);
  REQUIRE(begin >= 0);
  // Each server's watch waits 1 s for a newer map: about 4 each in 4 s.
  // Bound: twice that, plus one for a map that changed meanwhile.
  INFO("WatchPartitionMap calls in 4 s: " << end - begin);
  CHECK(end - begin <= 2 * (2 * absl::ToDoubleSeconds(wait) + 1));
  CHECK(c.server(0).Running());
  CHECK(c.server(1).Running());
}

}  // namespace
}  // namespace cairn
