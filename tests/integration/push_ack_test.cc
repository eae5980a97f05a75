// rpc.push_ack: accepted (the default). A server with no backup answers a
// plain SSP or ASP push through gRPC once it is checked and recorded, and
// applies it after the answer left; a pull or a clock tick that reaches
// the server after that answer waits for the update (Shard::Push). Here the update of one push is held
// back by a stall kill point between the answer and the update
// (common/killpoint.h), on one of two serving threads: the push's answer
// comes at once, and the next pull, served by the other thread, waits for
// the update and sees it. (Ticks and Stats wait the same way:
// tests/server/shard/accepted_push_test.cc.)
//
// Exact arithmetic: SGD with learning rate 1 from 0, gradient 1 per push.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/client_threads.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

constexpr int kStallMs = 1500;
constexpr int kStalledPush = 3;

std::unique_ptr<TestCluster> StartCluster(const std::string& name) {
  const std::string yaml = R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: 1
  partitions: 2
  lease_timeout: 10s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: ssp
  staleness: 1
rpc:
  # The stalled push holds one thread; the other serves the next call.
  server_threads: 2
  # Values inline in the gRPC request: a push through a region is answered
  # once applied (the worker reuses its region once answered).
  shared_memory: false
tables:
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
)";
  TestCluster::Env env;
  env.servers = {
      {absl::StrCat("CAIRN_KILLPOINT=push.after_answer:at_", kStalledPush, ":stall_", kStallMs)}};
  auto cluster = TestCluster::Start(name, yaml, 1, env);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  return *std::move(cluster);
}

std::unique_ptr<Client> Connect(const TestCluster& cluster) {
  absl::StatusOr<std::vector<std::unique_ptr<Client>>> clients =
      testing::ConnectWorkers(cluster, 1, /*cache_bytes=*/0);
  INFO(clients.status().message());
  REQUIRE(clients.ok());
  return std::move(clients->front());
}

float Pull(Client& client) {
  float w = 0;
  const absl::Status s = client.PullDense({{"w", absl::MakeSpan(&w, 1)}}).get();
  INFO(s.message());
  REQUIRE(s.ok());
  return w;
}

const std::vector<float> kOne = {1.0f};

// Pushes 1..kStalledPush, the last answered before its update (which
// stalls); returns when that push was answered.
absl::Time PushUpToStalled(Client& client) {
  for (int step = 1; step <= kStalledPush; ++step) {
    const absl::Time start = absl::Now();
    const absl::Status s = client.PushDense({{"w", kOne}}).get();
    INFO("push " << step << ": " << s.message());
    REQUIRE(s.ok());
    // Answered before the stall, not after it.
    CHECK(absl::Now() - start < absl::Milliseconds(kStallMs / 2));
  }
  return absl::Now();
}

TEST_CASE("a push answered when accepted is applied before a later pull reads the table",
          "[integration][push_ack]") {
  auto cluster = StartCluster("push_ack_pull");
  std::unique_ptr<Client> client = Connect(*cluster);
  const absl::Time answered = PushUpToStalled(*client);
  CHECK(Pull(*client) == -3.0f);  // not -2: the pull waited for the update
  CHECK(absl::Now() - answered > absl::Milliseconds(kStallMs / 2));
  CHECK(cluster->server(0).ReadStderr().find("killpoint push.after_answer stalls") !=
        std::string::npos);
  for (int step = kStalledPush + 1; step <= 5; ++step) {
    REQUIRE(client->PushDense({{"w", kOne}}).get().ok());
  }
  CHECK(Pull(*client) == -5.0f);  // each push applied once
  CHECK(client->Finish().ok());
}

}  // namespace
}  // namespace cairn
