// A sparse table's time-to-live (tables[].ttl_clocks) through real daemons:
// 2 servers with a backup each, 1 worker, BSP. Rows the worker stops
// pushing go from every server once they have been idle that many
// iterations, counted in Stats and /metrics; the rows it keeps pushing
// stay, with their trained values; an expired id reads the initializer's
// value again.
#include <catch2/catch.hpp>

#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::ConnectAll;
using testing::TestCluster;

constexpr char kYaml[] = R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 8
  replication: 2
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
  - name: emb
    kind: sparse
    width: 4
    ttl_clocks: 2
    optimizer: {type: sgd, learning_rate: 0.5}
    init: {type: constant, value: 1.0}
)";

TEST_CASE("rows idle for ttl_clocks iterations go from every server, and the rows still pushed "
          "stay with their values",
          "[integration][embedding]") {
  auto cluster = TestCluster::Start("row_expiry", kYaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  CHECK_THAT(c.server(0).ReadStderr(),
             Catch::Contains("table emb: rows not updated for 2 clocks are deleted"));
  auto clients = ConnectAll(c, 1);
  Client& client = *clients[0];
  std::vector<Key> once, kept = {7, 1u << 20};
  for (Key k = 100; k < 150; ++k) once.push_back(k);
  std::vector<Key> first = once;
  first.insert(first.end(), kept.begin(), kept.end());
  // Iteration 0 pushes every key; iterations 1-3 only `kept`.
  REQUIRE(client.PushSparse("emb", first, std::vector<float>(first.size() * 4, 1.0f)).get().ok());
  REQUIRE(client.Clock().ok());
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(client.PushSparse("emb", kept, std::vector<float>(kept.size() * 4, 1.0f)).get().ok());
    REQUIRE(client.Clock().ok());
  }
  // A pull at clock 4 waits for iteration 3 to close on every server; the
  // rows of `once`, idle in iterations 1 and 2, went when 2 closed.
  std::vector<float> values(kept.size() * 4);
  REQUIRE(client.PullSparse("emb", kept, absl::MakeSpan(values)).get().ok());
  for (float v : values) CHECK(v == 1.0f - 4 * 0.5f);  // four updates of gradient 1
  std::vector<float> gone(once.size() * 4);
  REQUIRE(client.PullSparse("emb", once, absl::MakeSpan(gone)).get().ok());
  for (float v : gone) CHECK(v == 1.0f);  // the initializer's value again
  auto stats = testing::StatsOfServers(c);
  REQUIRE(stats.ok());
  uint64_t held = 0, expired = 0, admitted = 0;
  for (const v1::StatsResponse& s : *stats) {
    held += s.tables(0).num_keys();
    expired += s.tables(0).expired_rows();
    admitted += s.tables(0).admitted_rows();
  }
  // Every row is on its primary and its backup.
  CHECK(held == 2 * kept.size());
  CHECK(expired == 2 * once.size());
  CHECK(admitted == 2 * first.size());
  for (int s = 0; s < 2; ++s) {
    auto body = testing::HttpGet(c.server_metrics_port(s), "/metrics");
    REQUIRE(body.ok());
    auto counted = testing::MetricValue(*body, "cairn_shard_expired_rows_total{table=\"emb\"}");
    REQUIRE(counted.ok());
    CHECK(*counted == static_cast<double>((*stats)[s].tables(0).expired_rows()));
  }
  CHECK(client.Finish().ok());
}

}  // namespace
}  // namespace cairn
