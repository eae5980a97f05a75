// Field case B26: a push that timed out may have landed. The server applies
// it, then its answer is late (a stall kill point after the apply,
// common/killpoint.h): the client library resends the same request, under
// the same sequence number, which the server recognises and does not apply
// again. Without retries the caller gets DeadlineExceeded saying the push
// may have been applied, and a pull shows that it was.
//
// Exact arithmetic: SGD with learning rate 1 from 0, gradient 1 per push.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

constexpr absl::Duration kDeadline = absl::Seconds(1);
constexpr int kStallMs = 1500;  // 1.5 x the deadline

std::string JobYaml(int workers, const std::string& mode) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: )", workers, R"(
  partitions: 2
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: )", mode, R"(
rpc:
  # The stall sleeps on a thread that serves calls: with a second one, only
  # the stalled push's answer is late, and the other worker's tick, sent
  # just before it, is still answered in time.
  server_threads: 2
  # Answered once applied: the stall after the apply delays the answer
  # (push_ack_test.cc covers answers sent when a push is accepted).
  push_ack: applied
tables:
  - name: w
    kind: dense
    shape: [1]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
)");
}

// The server stalls after applying its `hit`-th push.
std::unique_ptr<TestCluster> StartCluster(const std::string& name, int workers,
                                          const std::string& mode, int hit) {
  TestCluster::Env env;
  env.servers = {{absl::StrCat("CAIRN_KILLPOINT=push.after_apply:at_", hit, ":stall_", kStallMs)}};
  auto cluster = TestCluster::Start(name, JobYaml(workers, mode), 1, env);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  return *std::move(cluster);
}

std::vector<std::unique_ptr<Client>> Connect(const TestCluster& cluster, int workers,
                                             int push_attempts) {
  std::vector<std::future<absl::StatusOr<std::unique_ptr<Client>>>> pending;
  for (int id = 0; id < workers; ++id) {
    pending.push_back(std::async(std::launch::async, [&cluster, id, push_attempts] {
      ClientOptions options;
      options.coordinator = cluster.coordinator_address();
      options.worker_id = id;
      options.connect_timeout = absl::Seconds(30);
      options.rpc_deadline = kDeadline;
      options.push_attempts = push_attempts;
      options.cache_bytes = 0;
      return Client::Connect(options);
    }));
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (auto& p : pending) {
    absl::StatusOr<std::unique_ptr<Client>> c = p.get();
    INFO(c.status().message());
    REQUIRE(c.ok());
    clients.push_back(*std::move(c));
  }
  return clients;
}

float Pull(Client& client) {
  float w = 0;
  const absl::Status s = client.PullDense({{"w", absl::MakeSpan(&w, 1)}}).get();
  INFO(s.message());
  REQUIRE(s.ok());
  return w;
}

double Duplicates(const TestCluster& cluster) {
  absl::StatusOr<std::string> text = testing::HttpGet(cluster.server_metrics_port(0), "/metrics");
  if (!text.ok()) return -1;
  absl::StatusOr<double> v = testing::MetricValue(*text, "cairn_shard_duplicate_pushes_total");
  return v.ok() ? *v : -1;
}

const std::vector<float> kOne = {1.0f};

TEST_CASE("B26: a push that timed out is retried under its sequence and applied exactly once",
          "[integration][cases][retry]") {
  auto cluster = StartCluster("b26_retry", 1, "asp", 3);
  std::vector<std::unique_ptr<Client>> clients = Connect(*cluster, 1, 3);
  Client& client = *clients[0];
  for (int step = 1; step <= 5; ++step) {
    const absl::Time start = absl::Now();
    const absl::Status s = client.PushDense({{"w", kOne}}).get();
    INFO("step " << step << ": " << s.message() << "\n" << cluster->Logs());
    REQUIRE(s.ok());
    if (step == 3) CHECK(absl::Now() - start > kDeadline);  // its first answer was late
    REQUIRE(client.Clock().ok());
  }
  CHECK(cluster->server(0).ReadStderr().find("killpoint push.after_apply stalls") !=
        std::string::npos);
  CHECK(Pull(client) == -5.0f);  // not -6: the retry was not applied again
  CHECK(Duplicates(*cluster) == 1);
  CHECK(client.Finish().ok());
}

TEST_CASE("B26: without retries a timed-out push reports an unknown outcome, and it did land",
          "[integration][cases][retry]") {
  auto cluster = StartCluster("b26_no_retry", 1, "asp", 3);
  std::vector<std::unique_ptr<Client>> clients = Connect(*cluster, 1, 1);
  Client& client = *clients[0];
  for (int step = 1; step <= 3; ++step) {
    const absl::Status s = client.PushDense({{"w", kOne}}).get();
    if (step < 3) {
      REQUIRE(s.ok());
    } else {
      CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
      CHECK_THAT(std::string(s.message()), Catch::Contains("may have been applied"));
    }
  }
  absl::SleepFor(absl::Milliseconds(kStallMs));  // the stalled answer goes out
  CHECK(Pull(client) == -3.0f);  // the push that "failed" was applied
  CHECK(Duplicates(*cluster) == 0);
  CHECK(client.Finish().ok());
}

TEST_CASE("B26: under BSP a retried push counts its worker once in the iteration",
          "[integration][cases][retry]") {
  // Two workers push in turn; the server's 5th push (worker 0, step 3) is
  // late. Aggregation sum: each iteration moves w by -2.
  auto cluster = StartCluster("b26_bsp", 2, "bsp", 5);
  std::vector<std::unique_ptr<Client>> clients = Connect(*cluster, 2, 3);
  for (int step = 1; step <= 5; ++step) {
    for (auto& c : clients) {
      const absl::Status s = c->PushDense({{"w", kOne}}).get();
      INFO("step " << step << " worker " << c->worker_id() << ": " << s.message());
      REQUIRE(s.ok());
    }
    for (auto& c : clients) {
      const absl::Status clocked = c->Clock();
      INFO("step " << step << " worker " << c->worker_id() << " clock: " << clocked.message());
      REQUIRE(clocked.ok());
    }
  }
  CHECK(Pull(*clients[0]) == -10.0f);  // not -11
  CHECK(Duplicates(*cluster) == 1);
  for (auto& c : clients) CHECK(c->Finish().ok());
}

}  // namespace
}  // namespace cairn
