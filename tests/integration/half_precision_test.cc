// Values and gradients on the wire in 16 bits (TableSpec.wire_dtype) against
// a real cluster: the servers keep, sum and apply float32 (field case C09),
// and what a worker reads is the float32 value rounded once.
#include <catch2/catch.hpp>
#include <cmath>
#include <future>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/wire_dtype.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

// Slower to connect than the defaults: 8 workers start at once.
std::vector<std::unique_ptr<Client>> ConnectWorkers(const TestCluster& cluster, int n) {
  return testing::ConnectAll(cluster, n, absl::Seconds(30), absl::Seconds(60));
}

std::string Yaml(int workers, const std::string& mode, const std::string& tables) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: )", workers, R"(
  partitions: 4
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 60s
rpc:
  deadline: 30s
consistency:
  mode: )", mode, R"(
tables:
)", tables);
}

TEST_CASE("C09: 8 workers' fp16 gradients of 10000 average to exactly 10000 on the server",
          "[integration][cases][wire_dtype]") {
  constexpr int kWorkers = 8;
  constexpr int kElements = 100000;
  const std::string tables = R"(
  - name: w
    kind: dense
    shape: [100000]
    wire_dtype: fp16
    optimizer: {type: sgd, learning_rate: 0.0001}
  - name: at
    kind: dense
    shape: [100000]
    wire_dtype: fp16
    optimizer: {type: sgd, learning_rate: 0.5}
)";
  auto cluster = TestCluster::Start("c09", Yaml(kWorkers, "bsp", tables), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectWorkers(**cluster, kWorkers);
  // 8 x 10000 = 80000 is past float16's largest value (65504): summed in the
  // wire's type it would be infinity.
  const std::vector<float> grad(kElements, 10000.0f);
  // Indices past 2^16: an index or offset kept in 16 bits would land elsewhere.
  std::vector<float> at(kElements, 0.0f);
  at[40000] = 2.0f;
  at[70000] = 2.0f;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      CHECK(clients[w]->PushDense({{"w", grad}, {"at", at}}).get().ok());
      CHECK(clients[w]->Clock().ok());
    });
  }
  for (auto& t : threads) t.join();
  std::vector<float> w(kElements), a(kElements);
  REQUIRE(clients[0]->PullDense({{"w", absl::MakeSpan(w)}, {"at", absl::MakeSpan(a)}}).get().ok());
  size_t wrong = 0;
  for (float v : w) wrong += v != -1.0f;  // 0 - 1e-4 * mean(10000); -1 travels exactly
  CHECK(wrong == 0);
  CHECK(a[40000] == -1.0f);
  CHECK(a[70000] == -1.0f);
  size_t moved = 0;
  for (int i = 0; i < kElements; ++i) moved += a[i] != 0.0f;
  CHECK(moved == 2);

  SECTION("an fp16 gradient that is already infinite is refused by the non-finite policy") {
    std::vector<float> inf(kElements, 0.0f);
    inf[5] = std::numeric_limits<float>::infinity();
    absl::Status s = clients[0]->PushDense({{"w", inf}}).get();
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("not finite"));
    // 70000 is no infinity in float32, but is past float16: it becomes one on
    // the wire, and is refused the same way, naming the table.
    std::vector<float> big(kElements, 0.0f);
    big[7] = 70000.0f;
    s = clients[0]->PushDense({{"w", big}}).get();
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("table=w"));
    REQUIRE(clients[0]->PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
    CHECK(w[5] == -1.0f);
    CHECK(w[7] == -1.0f);
  }
}

TEST_CASE("bf16 on the wire: the server applies float32, a pull reads it rounded once",
          "[integration][wire_dtype]") {
  const std::string tables = R"(
  - name: d
    kind: dense
    shape: [3, 5]
    wire_dtype: bf16
    init: {type: constant, value: 1.0}
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: e
    kind: sparse
    width: 4
    wire_dtype: bf16
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: f
    kind: dense
    shape: [15]
    init: {type: constant, value: 1.0}
    optimizer: {type: sgd, learning_rate: 1.0}
)";
  auto cluster = TestCluster::Start("wire_bf16", Yaml(1, "asp", tables), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = ConnectWorkers(**cluster, 1);
  Client& c = *clients[0];
  std::vector<float> g(15);
  for (int i = 0; i < 15; ++i) g[i] = 0.1f * static_cast<float>(i + 1) / 3.0f;
  REQUIRE(c.PushDense({{"d", g}, {"f", g}}).get().ok());
  REQUIRE(c.PushDense({{"d", g}}).get().ok());
  std::vector<float> d(15), f(15);
  REQUIRE(c.PullDense({{"d", absl::MakeSpan(d)}, {"f", absl::MakeSpan(f)}}).get().ok());
  for (int i = 0; i < 15; ++i) {
    // Each push rounds the gradient to bf16; the server sums in float32.
    const float step = Bf16ToFloat(FloatToBf16(g[i]));
    const float server = (1.0f - step) - step;
    CHECK(d[i] == Bf16ToFloat(FloatToBf16(server)));
    CHECK(f[i] == 1.0f - g[i]);  // the fp32 table next to it is untouched by rounding
  }
  const std::vector<Key> keys = {3, 1ull << 40, 7};
  std::vector<float> rows = {0.3f, -0.7f, 1.1f, 2.5f, 1, 2, 3, 4, -0.01f, 0.02f, 0.5f, 8.0f};
  REQUIRE(c.PushSparse("e", keys, rows).get().ok());
  std::vector<float> out(12);
  REQUIRE(c.PullSparse("e", keys, absl::MakeSpan(out)).get().ok());
  for (int i = 0; i < 12; ++i) {
    CHECK(out[i] == Bf16ToFloat(FloatToBf16(-Bf16ToFloat(FloatToBf16(rows[i])))));
  }
}

}  // namespace
}  // namespace cairn
