// Field failure cases (../shared/cases/field-failures.md) that touch the
// foundation, each against a real cluster on loopback with its exact values.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <future>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/bytes.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::Connect;
using testing::ConnectAll;
using testing::TestCluster;

std::string Yaml(int servers, int workers, const std::string& tables,
                 const std::string& extra_cluster = "", const std::string& rpc = "") {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, R"(
  workers: )", workers, R"(
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
)", extra_cluster.empty() ? "  startup_timeout: 30s\n" : extra_cluster, R"(rpc:
)", rpc.empty() ? "  deadline: 20s\n" : rpc, R"(consistency:
  mode: bsp
tables:
)", tables);
}

TEST_CASE("B05: keys at both ends of the 64-bit space belong to exactly one server",
          "[integration][cases]") {
  const int servers = GENERATE(1, 2, 3, 7);
  auto cluster = TestCluster::Start(absl::StrCat("b05_", servers), Yaml(servers, 1, R"(
  - name: emb
    kind: sparse
    width: 4
    optimizer: {type: sgd, learning_rate: 0.5}
    init: {type: constant, value: 2.0}
)"), servers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectAll(**cluster, 1);
  const std::vector<Key> keys = {0, 1, Key{1} << 63, std::numeric_limits<Key>::max() - 1,
                                 std::numeric_limits<Key>::max()};
  REQUIRE(clients[0]->PushSparse("emb", keys, std::vector<float>(20, 1.0f)).get().ok());
  REQUIRE(clients[0]->Clock().ok());
  std::vector<float> rows(20);
  REQUIRE(clients[0]->PullSparse("emb", keys, absl::MakeSpan(rows)).get().ok());
  for (float v : rows) CHECK(v == 1.5f);  // init 2.0 - 0.5 * 1.0
  // Every key is held by exactly its primary and (replication defaults to 2
  // with 2 or more servers) one backup: the rows summed over servers = 5 * r.
  auto stats = testing::StatsOfServers(**cluster);
  INFO(stats.status().message());
  REQUIRE(stats.ok());
  uint64_t total = 0;
  for (const v1::StatsResponse& s : *stats) total += s.tables(0).num_keys();
  CHECK(total == 5 * static_cast<uint64_t>(std::min(2, servers)));
  CHECK(clients[0]->Finish().ok());
}

TEST_CASE("B04: servers that hold no parameters do not stall BSP, results match one server",
          "[integration][cases]") {
  const std::string tables = R"(
  - name: a
    kind: dense
    shape: [8]
    optimizer: {type: sgd, learning_rate: 0.25}
    init: {type: constant, value: 1.0}
  - name: b
    kind: dense
    shape: [8]
    optimizer: {type: sgd, learning_rate: 0.25}
    init: {type: constant, value: 1.0}
)";
  auto run = [&](int servers) {
    auto cluster = TestCluster::Start(absl::StrCat("b04_", servers), Yaml(servers, 2, tables), servers);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    auto clients = ConnectAll(**cluster, 2);
    std::vector<std::thread> threads;
    std::vector<std::vector<float>> result(2, std::vector<float>(16));
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, w] {
        std::vector<float> a(8), b(8);
        for (int step = 0; step < 5; ++step) {
          REQUIRE(clients[w]->PullDense({{"a", absl::MakeSpan(a)}, {"b", absl::MakeSpan(b)}}).get().ok());
          std::vector<float> ga(8), gb(8);
          for (int i = 0; i < 8; ++i) {
            ga[i] = a[i] * static_cast<float>(w + 1);
            gb[i] = static_cast<float>(i - w);
          }
          // An empty push on a step is fine and still lets the clock advance.
          if (step != 2) REQUIRE(clients[w]->PushDense({{"a", ga}, {"b", gb}}).get().ok());
          REQUIRE(clients[w]->Clock().ok());
        }
        REQUIRE(clients[w]->PullDense({{"a", absl::MakeSpan(a)}, {"b", absl::MakeSpan(b)}}).get().ok());
        std::copy(a.begin(), a.end(), result[w].begin());
        std::copy(b.begin(), b.end(), result[w].begin() + 8);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(result[0] == result[1]);
    return result[0];
  };
  const std::vector<float> four = run(4);
  const std::vector<float> one = run(1);
  CHECK(four == one);  // bit for bit
  CHECK(four[0] != 1.0f);
}

TEST_CASE("B08: values far above gRPC's 4 MiB default round-trip, the configured limit is in effect",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("b08", Yaml(1, 1, R"(
  - name: dense
    kind: dense
    shape: [2000000]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
  - name: emb
    kind: sparse
    width: 64
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)", "", "  max_message_size: 4MiB\n  request_split_size: 1MiB\n  deadline: 20s\n"), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectAll(**cluster, 1);
  Client& client = *clients[0];
  std::vector<float> dense(2000000);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = static_cast<float>(i % 65536) - 1000.0f;
  std::vector<Key> keys(40000);
  std::vector<float> rows(40000 * 64);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i * 7919 + 3;
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i % 1021) * 0.5f;
  auto p1 = client.PushDense({{"dense", dense}});
  auto p2 = client.PushSparse("emb", keys, rows);
  REQUIRE(p1.get().ok());
  REQUIRE(p2.get().ok());
  REQUIRE(client.Clock().ok());
  std::vector<float> dense_back(dense.size()), rows_back(rows.size());
  auto q1 = client.PullDense({{"dense", absl::MakeSpan(dense_back)}});
  auto q2 = client.PullSparse("emb", keys, absl::MakeSpan(rows_back));
  REQUIRE(q1.get().ok());
  REQUIRE(q2.get().ok());
  for (size_t i = 0; i < dense.size(); ++i) dense_back[i] = -dense_back[i];
  for (size_t i = 0; i < rows.size(); ++i) rows_back[i] = -rows_back[i];
  CHECK(dense_back == dense);
  CHECK(rows_back == rows);

  // One raw unary pull of all 8 MB exceeds the configured 4 MiB: the server
  // refuses to send it, which shows the limit in effect is the configured one.
  CoordinatorClient coordinator((*cluster)->coordinator_address(), 64 << 20);
  auto map = coordinator.GetPartitionMap(absl::Seconds(10));
  REQUIRE(map.ok());
  auto stub = v1::ParameterService::NewStub(MakeChannel(map->map().servers(0).address(), 64 << 20));
  v1::PullRequest request;
  request.set_map_version(map->map().version());
  request.set_clock(0);
  v1::TableKeys* tk = request.add_tables();
  tk->set_table("dense");
  tk->set_table_id(0);
  const auto* spec = &map->job().tables(0);
  std::vector<Key> chunks;
  for (Key c = 0; c * spec->chunk_size() < 2000000; ++c) chunks.push_back(c);
  tk->set_keys(KeysToBytes(chunks));
  grpc::ClientContext context;
  v1::PullResponse response;
  grpc::Status s = stub->Pull(&context, request, &response);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(client.Finish().ok());
}

TEST_CASE("B12: a late worker holds the others at the start-up barrier, not mid-step",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("b12a", Yaml(2, 3, R"(
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::vector<std::future<absl::StatusOr<std::unique_ptr<Client>>>> early;
  for (int i = 0; i < 2; ++i) {
    early.push_back(std::async(std::launch::async, [&, i] { return Connect(**cluster, i); }));
  }
  CHECK(early[0].wait_for(std::chrono::seconds(3)) == std::future_status::timeout);
  auto late = Connect(**cluster, 2);
  REQUIRE(late.ok());
  std::vector<std::unique_ptr<Client>> clients;
  for (auto& f : early) {
    auto c = f.get();
    REQUIRE(c.ok());
    clients.push_back(std::move(*c));
  }
  clients.push_back(std::move(*late));
  std::vector<std::thread> threads;
  std::vector<float> final_value(3);
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::vector<float> one = {1.0f}, v(1);
      for (int step = 0; step < 5; ++step) {
        REQUIRE(clients[w]->PushDense({{"w", one}}).get().ok());
        REQUIRE(clients[w]->Clock().ok());
      }
      REQUIRE(clients[w]->PullDense({{"w", absl::MakeSpan(v)}}).get().ok());
      final_value[w] = v[0];
    });
  }
  for (auto& t : threads) t.join();
  // 5 iterations of mean(1, 1, 1) at lr 1: exactly the single-process value -5.
  for (float v : final_value) CHECK(v == -5.0f);
}

TEST_CASE("B12: a worker that never comes fails the start-up barrier with a clear error",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("b12b", Yaml(1, 2, R"(
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
)"), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const absl::Time start = absl::Now();
  auto client = Connect(**cluster, 0, absl::Seconds(3));
  CHECK(absl::Now() - start < absl::Seconds(10));
  REQUIRE_FALSE(client.ok());
  CHECK(client.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(client.status().message()), Catch::Contains("1 of 2 workers"));
}

TEST_CASE("B12: workers that start before the servers wait for them", "[integration][cases]") {
  auto cluster = TestCluster::Start("b12c", Yaml(1, 1, R"(
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
)"), 0);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto pending = std::async(std::launch::async, [&] { return Connect(**cluster, 0); });
  CHECK(pending.wait_for(std::chrono::seconds(2)) == std::future_status::timeout);
  REQUIRE((*cluster)->StartServer().ok());
  auto client = pending.get();
  REQUIRE(client.ok());
  std::vector<float> v(1);
  CHECK((*client)->PullDense({{"w", absl::MakeSpan(v)}}).get().ok());
}

TEST_CASE("B17: a NaN or Inf push is rejected, counted, and never reaches the parameters",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("b17", Yaml(2, 3, R"(
  - name: w
    kind: dense
    shape: [4]
    optimizer: {type: sgd, learning_rate: 0.1}
    init: {type: constant, value: 1.0}
  - name: emb
    kind: sparse
    width: 4
    optimizer: {type: adam, learning_rate: 0.1, beta1: 0.9, beta2: 0.999, epsilon: 1.0e-8}
    init: {type: zeros}
)"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectAll(**cluster, 3);
  const std::vector<Key> keys = {10, 11};
  std::vector<std::thread> threads;
  std::vector<absl::Status> bad_dense(3), bad_sparse(3);
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      for (int step = 0; step < 5; ++step) {
        std::vector<float> g(4, 1.0f), rows(8, 1.0f);
        if (w == 1 && step == 3) {
          g[0] = std::numeric_limits<float>::quiet_NaN();
          rows[0] = std::numeric_limits<float>::infinity();
          for (int i = 1; i < 4; ++i) rows[i] = 0.0f;
          bad_dense[w] = clients[w]->PushDense({{"w", g}}).get();
          bad_sparse[w] = clients[w]->PushSparse("emb", std::vector<Key>{10}, absl::MakeSpan(rows).subspan(0, 4)).get();
        } else {
          REQUIRE(clients[w]->PushDense({{"w", g}}).get().ok());
          REQUIRE(clients[w]->PushSparse("emb", keys, rows).get().ok());
        }
        REQUIRE(clients[w]->Clock().ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad_dense[1].code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad_dense[1].message()), Catch::Contains("table=w"));
  CHECK(bad_sparse[1].code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad_sparse[1].message()), Catch::Contains("key 10"));
  std::vector<float> w(4), rows(8);
  REQUIRE(clients[0]->PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  REQUIRE(clients[0]->PullSparse("emb", keys, absl::MakeSpan(rows)).get().ok());
  // Every iteration applies the mean of the good pushes (1.0): w = 1 - 5 * 0.1.
  for (float v : w) CHECK_THAT(v, Catch::Matchers::WithinAbs(0.5, 1e-6));
  for (float v : rows) CHECK(std::isfinite(v));
  double rejected = 0;
  for (int s = 0; s < 2; ++s) {
    auto body = testing::HttpGet((*cluster)->server_metrics_port(s), "/metrics");
    REQUIRE(body.ok());
    for (const char* t : {"w", "emb"}) {
      auto v = testing::MetricValue(*body, absl::StrCat("cairn_shard_nonfinite_rejected_total{table=\"", t, "\"}"));
      if (v.ok()) rejected += *v;
    }
  }
  CHECK(rejected == 2);
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

TEST_CASE("B21: idle channels and a barrier held past the keepalive interval get no GOAWAY",
          "[integration][cases][slow]") {
  // Client keepalive pings every 30 s; servers permit one every 10 s, with or
  // without calls in flight (common/grpc_util.h), so neither an idle worker
  // nor one parked at a barrier is cut off.
  auto cluster = TestCluster::Start("b21", Yaml(1, 2, R"(
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
)", "", "  deadline: 90s\n"), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectAll(**cluster, 2, absl::Seconds(90));
  std::vector<float> one = {1.0f}, v(1);
  // Worker 0 finishes iteration 0 and waits at the barrier for 35 s.
  REQUIRE(clients[0]->PushDense({{"w", one}}).get().ok());
  REQUIRE(clients[0]->Clock().ok());
  auto parked = clients[0]->PullDense({{"w", absl::MakeSpan(v)}});
  CHECK(parked.wait_for(std::chrono::seconds(35)) == std::future_status::timeout);
  // Worker 1 was idle all that time; its next push works on the first try.
  REQUIRE(clients[1]->PushDense({{"w", one}}).get().ok());
  REQUIRE(clients[1]->Clock().ok());
  REQUIRE(parked.get().ok());
  CHECK(v[0] == -1.0f);
  const std::string log = (*cluster)->Logs();
  CHECK_THAT(log, !Catch::Contains("too_many_pings"));
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

TEST_CASE("C05: negative int64 ids are their uint64 bit patterns: each row updates on one "
          "group, within the deadline",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("c05", Yaml(3, 1, R"(
  - name: emb
    kind: sparse
    width: 4
    optimizer: {type: sgd, learning_rate: 0.25}
    init: {type: constant, value: 1.0}
)", "", "  deadline: 5s\n"), 3);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectAll(**cluster, 1, absl::Seconds(5));
  const std::vector<int64_t> ids = {0, -1, -2, -5, std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()};
  std::vector<Key> keys;
  for (int64_t id : ids) keys.push_back(static_cast<Key>(id));  // the documented rule
  const absl::Time start = absl::Now();
  REQUIRE(clients[0]->PushSparse("emb", keys, std::vector<float>(24, 1.0f)).get().ok());
  REQUIRE(clients[0]->Clock().ok());
  std::vector<float> rows(24);
  REQUIRE(clients[0]->PullSparse("emb", keys, absl::MakeSpan(rows)).get().ok());
  CHECK(absl::Now() - start < absl::Seconds(5));
  for (float v : rows) CHECK(v == 0.75f);  // init 1.0 - 0.25 * 1.0
  // 6 rows, each on its group's primary and one backup (replication 2).
  auto stats = testing::StatsOfServers(**cluster);
  REQUIRE(stats.ok());
  uint64_t rows_held = 0;
  for (const v1::StatsResponse& s : *stats) rows_held += s.tables(0).num_keys();
  CHECK(rows_held == 12);
  CHECK(clients[0]->Finish().ok());
}

// A size field of /proc/<pid>/status ("RssAnon:", ...) in bytes.
uint64_t StatusBytes(pid_t pid, const std::string& field) {
  const double kib = testing::ProcStatusField(pid, std::string(absl::StripSuffix(field, ":")));
  return kib < 0 ? 0 : static_cast<uint64_t>(kib) << 10;
}

TEST_CASE("B24: a table with capacity_rows stays within it while a million new ids arrive, "
          "hot ids keep their values, cold ones come back initialised, evictions counted, "
          "under LRU and LFU",
          "[integration][cases]") {
  constexpr int kWidth = 16;
  constexpr uint64_t kCapacity = 100000;
  constexpr int kBatches = 100;
  constexpr int kNewPerBatch = 10000;  // 1,000,000 distinct ids, each pushed once
  constexpr int kHot = 1000;           // pushed in every batch
  constexpr float kLearningRate = 0.1f;
  // The case names LFU "or whatever our policy is": both run.
  const std::string policy = GENERATE("lru", "lfu");
  auto cluster = TestCluster::Start("b24_" + policy, Yaml(1, 1, absl::StrCat(R"(
  - name: emb
    kind: sparse
    width: )", kWidth, R"(
    capacity_rows: )", kCapacity, R"(
    eviction: )", policy, R"(
    optimizer: {type: adagrad, learning_rate: 0.1, epsilon: 0.0, initial_accumulator: 0.0}
    init: {type: zeros}
    consistency: asp
  - name: warmup
    kind: dense
    shape: [)", kHot + kNewPerBatch, ", ", kWidth, R"(]
    consistency: asp
)")), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  CHECK_THAT(c.server(0).ReadStderr(),
             Catch::Contains(absl::StrCat(
                 "table emb: at most 100000 rows on this server; beyond, the ",
                 policy == "lfu" ? "least often updated (LFU)" : "least recently updated",
                 " go down to 0.9 of that")));
  auto clients = ConnectAll(c, 1);
  Client& client = *clients[0];
  std::vector<Key> keys(kHot + kNewPerBatch);
  const std::vector<float> grads(keys.size() * kWidth, 1.0f);
  // The baseline: a server that has served pushes of this size (request
  // buffers, gRPC's and the allocator's caches), before the table grows.
  for (int i = 0; i < 3; ++i) REQUIRE(client.PushDense({{"warmup", grads}}).get().ok());
  const uint64_t rss_start = StatusBytes(c.server(0).pid(), "RssAnon:");
  uint64_t most_rows = 0;
  for (int b = 0; b < kBatches; ++b) {
    for (int i = 0; i < kHot; ++i) keys[i] = static_cast<Key>(i);
    for (int i = 0; i < kNewPerBatch; ++i) {
      keys[kHot + i] = (Key{1} << 40) + static_cast<Key>(b) * kNewPerBatch + i;
    }
    REQUIRE(client.PushSparse("emb", keys, grads).get().ok());
    auto stats = testing::StatsOfServers(c);
    REQUIRE(stats.ok());
    most_rows = std::max<uint64_t>(most_rows, (*stats)[0].tables(0).num_keys());
  }
  CHECK(most_rows <= kCapacity);  // at every batch's end
  const uint64_t rss_end = StatusBytes(c.server(0).pid(), "RssAnon:");
  // The rows and adagrad slots of 100,000 rows are 12.8 MB; the case allows
  // 3x that over the baseline, "about 40 MB". Measured: 25 MiB since the row
  // arrays are reserved for the capacity (33-37 MiB before, when they
  // doubled past it).
  const uint64_t allowed = 40'000'000;
  INFO("RssAnon " << (rss_start >> 20) << " MiB at the start, " << (rss_end >> 20)
                  << " MiB after 1,000,000 ids; allowed growth " << (allowed >> 20) << " MiB");
  CHECK(rss_end <= rss_start + allowed);

  // Hot ids: 100 adagrad updates of gradient 1 each, w = -lr * sum 1/sqrt(k).
  double expected = 0;
  for (int k = 1; k <= kBatches; ++k) expected -= kLearningRate / std::sqrt(static_cast<double>(k));
  std::vector<float> hot(kHot * kWidth);
  REQUIRE(client.PullSparse("emb", absl::MakeConstSpan(keys.data(), kHot), absl::MakeSpan(hot))
              .get()
              .ok());
  for (float v : hot) REQUIRE_THAT(v, Catch::Matchers::WithinAbs(expected, 1e-4));
  // The first batch's cold ids were evicted long ago: initialised again.
  const std::vector<Key> cold = {Key{1} << 40, (Key{1} << 40) + 1};
  std::vector<float> rows(cold.size() * kWidth, 1.0f);
  REQUIRE(client.PullSparse("emb", cold, absl::MakeSpan(rows)).get().ok());
  for (float v : rows) CHECK(v == 0.0f);
  // Evictions counted: every row made minus those held, in Stats and /metrics.
  auto stats = testing::StatsOfServers(c);
  REQUIRE(stats.ok());
  const v1::TableStats& t = (*stats)[0].tables(0);
  const uint64_t made = kHot + uint64_t{kBatches} * kNewPerBatch;
  CHECK(t.evicted_rows() == made - t.num_keys());
  auto body = testing::HttpGet(c.server_metrics_port(0), "/metrics");
  REQUIRE(body.ok());
  auto evicted = testing::MetricValue(*body, "cairn_shard_evicted_rows_total{table=\"emb\"}");
  auto held = testing::MetricValue(*body, "cairn_shard_keys{table=\"emb\"}");
  auto bytes = testing::MetricValue(*body, "cairn_shard_table_bytes{table=\"emb\"}");
  REQUIRE(evicted.ok());
  REQUIRE(held.ok());
  REQUIRE(bytes.ok());
  CHECK(*evicted == static_cast<double>(t.evicted_rows()));
  CHECK(*held == static_cast<double>(t.num_keys()));
  CHECK(*bytes == static_cast<double>(t.num_keys() * kWidth * sizeof(float)));
  CHECK(client.Finish().ok());
}

TEST_CASE("C11: resident memory stays flat over 10 cycles of a million new ids each through a "
          "table at capacity",
          "[integration][cases]") {
  constexpr int kWidth = 16;
  constexpr uint64_t kCapacity = 100000;
  constexpr int kCycles = 10;
  constexpr int kBatch = 20000;
  constexpr int kBatchesPerCycle = 50;  // 1,000,000 new ids per cycle
  auto cluster = TestCluster::Start("c11", Yaml(1, 1, absl::StrCat(R"(
  - name: emb
    kind: sparse
    width: )", kWidth, R"(
    capacity_rows: )", kCapacity, R"(
    optimizer: {type: adagrad, learning_rate: 0.1}
    consistency: asp
)")), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  const pid_t server = c.server(0).pid();
  auto clients = ConnectAll(c, 1);
  Client& client = *clients[0];
  std::vector<Key> keys(kBatch);
  const std::vector<float> grads(keys.size() * kWidth, 0.5f);
  Key next = 1;
  uint64_t most_rows = 0;
  std::vector<uint64_t> rss;  // RssAnon after each cycle (not the workers' shared regions)
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    for (int b = 0; b < kBatchesPerCycle; ++b) {
      for (Key& k : keys) k = next++;
      REQUIRE(client.PushSparse("emb", keys, grads).get().ok());
    }
    auto stats = testing::StatsOfServers(c);
    REQUIRE(stats.ok());
    most_rows = std::max<uint64_t>(most_rows, (*stats)[0].tables(0).num_keys());
    rss.push_back(StatusBytes(server, "RssAnon:"));
  }
  INFO("RssAnon after cycle 1: " << (rss.front() >> 20) << " MiB, after cycle 10: "
                                 << (rss.back() >> 20) << " MiB");
  CHECK(most_rows <= kCapacity);
  CHECK(rss.back() <= rss.front() + rss.front() / 10);  // within 1.10x of cycle 1
  // The peak over the whole run, eviction passes included, within 1.2x of
  // the steady state after cycle 10. (The server keeps freed memory for
  // reuse, so its resident set does not fall back after a peak: this bounds
  // what it holds for good. Reserving the row arrays for the capacity and a
  // quarter more, instead of letting them double past it, took it from 32
  // to 29 MiB of anonymous memory here.)
  const uint64_t peak = StatusBytes(server, "VmHWM:");
  const uint64_t steady = StatusBytes(server, "VmRSS:");
  INFO("VmHWM " << (peak >> 20) << " MiB, VmRSS after cycle 10 " << (steady >> 20) << " MiB");
  CHECK(peak <= steady + steady / 5);
  // Not checked here: the case's 20 restores in a row into a running server.
  CHECK(client.Finish().ok());
}

TEST_CASE("C10: sparse rows update lazily (momentum and Adam), dense chunks on every push",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("c10", Yaml(1, 1, R"(
  - name: sparse_momentum
    kind: sparse
    width: 1
    optimizer: {type: sgd, learning_rate: 1.0, momentum: 0.5}
    consistency: asp
  - name: dense_momentum
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0, momentum: 0.5}
    consistency: asp
  - name: sparse_adam
    kind: sparse
    width: 1
    optimizer: {type: adam, learning_rate: 0.1}
    consistency: asp
)"), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  CHECK_THAT((*cluster)->server(0).ReadStderr(),
             Catch::Contains("table sparse_momentum: consistency asp, staleness bound none "
                             "(never waits), updates lazy"));
  // B24: the sparse tables without a capacity are named at the start, in
  // one line.
  CHECK_THAT((*cluster)->server(0).ReadStderr(),
             Catch::Contains("tables sparse_momentum, sparse_adam: no capacity_rows: this server "
                             "keeps a row for every id pushed, without bound"));
  auto clients = ConnectAll(**cluster, 1);
  Client& c = *clients[0];
  const std::vector<Key> row = {7};
  const std::vector<Key> both = {7, 8};  // 8: pushed at every step
  const std::vector<float> one = {1.0f};
  // Gradients 1, (absent), 1 for the sparse rows; 1, 0, 1 for the dense one.
  for (int step = 0; step < 3; ++step) {
    const bool absent = step == 1;
    const std::vector<float> dense = {absent ? 0.0f : 1.0f};
    REQUIRE(c.PushDense({{"dense_momentum", dense}}).get().ok());
    if (!absent) {
      REQUIRE(c.PushSparse("sparse_momentum", row, one).get().ok());
      REQUIRE(c.PushSparse("sparse_adam", both, {1.0f, 1.0f}).get().ok());
    } else {
      REQUIRE(c.PushSparse("sparse_adam", {8}, one).get().ok());
    }
  }
  std::vector<float> sparse(1), dense(1), adam(2);
  REQUIRE(c.PullSparse("sparse_momentum", row, absl::MakeSpan(sparse)).get().ok());
  REQUIRE(c.PullDense({{"dense_momentum", absl::MakeSpan(dense)}}).get().ok());
  REQUIRE(c.PullSparse("sparse_adam", both, absl::MakeSpan(adam)).get().ok());
  CHECK(sparse[0] == -2.5f);   // -1, then v = 0.5 * 1 + 1: -1 - 1.5 (lazy)
  CHECK(dense[0] == -2.75f);   // -1, -0.5, then v = 0.25 + 1: exact decay
  // Adam with gradient 1 at every update of a row: m / (1 - b1^t) = 1 and
  // v / (1 - b2^t) = 1 when t counts that row's own updates, so each update
  // moves it by lr / (1 + eps): row 7 (2 updates) ends at -0.2, row 8 (3)
  // at -0.3. Counted by the job's clock, row 7's second update would use
  // t = 3 and move it by about 0.07 instead of 0.1.
  CHECK(adam[0] == Approx(-0.2).margin(1e-5));
  CHECK(adam[1] == Approx(-0.3).margin(1e-5));
  CHECK(c.Finish().ok());
}

}  // namespace
}  // namespace cairn
