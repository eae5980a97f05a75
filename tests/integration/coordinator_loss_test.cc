// Field case B13, second half: the coordinator is killed and never comes
// back. Every server and worker must end on its own, with a "lost the
// coordinator" error, within max(10 s, 4 leases) plus a heartbeat: no orphan
// process keeps running.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

// An ASP job of 2 servers and 1 worker with one small dense table.
// `cluster_extra` goes into `cluster:` (lease, heartbeat, replication).
std::string AspJob(const std::string& cluster_extra, const std::string& deadline) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 4
  startup_timeout: 30s
)", cluster_extra, R"(rpc:
  deadline: )", deadline, R"(
consistency:
  mode: asp
tables:
  - name: w
    kind: dense
    shape: [64]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)");
}


TEST_CASE("B13: without the coordinator every server and worker ends within the loss timeout",
          "[integration][cases][B13]") {
  auto cluster = TestCluster::Start(
      "b13_lost",
      AspJob("  replication: 1   # with one copy servers never fence: the data path outlives "
             "the coordinator\n  lease_timeout: 2s\n  heartbeat_interval: 200ms\n",
             "3s"),
      2);
  REQUIRE(cluster.ok());
  ClientOptions options;
  options.coordinator = (*cluster)->coordinator_address();
  options.worker_id = 0;
  options.rpc_deadline = absl::Seconds(3);
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  std::vector<float> g(64, 1.0f);
  REQUIRE((*client)->PushDense({{"w", absl::MakeConstSpan(g)}}).get().ok());
  REQUIRE((*client)->Clock().ok());

  (*cluster)->KillCoordinator();
  const absl::Time killed = absl::Now();
  // ASP: the data path goes on without the coordinator for a while.
  REQUIRE((*client)->PushDense({{"w", absl::MakeConstSpan(g)}}).get().ok());
  // Then the worker gives up: max(10 s, 4 x 2 s) = 10 s without an answer.
  absl::Status status;
  while (absl::Now() - killed < absl::Seconds(14)) {
    status = (*client)->PushDense({{"w", absl::MakeConstSpan(g)}}).get();
    if (!status.ok()) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  // The worker gave up on the coordinator, or found the servers gone (they
  // give up after the same timeout): either way its calls fail.
  INFO(status.message());
  CHECK(absl::IsUnavailable(status));
  CHECK(absl::Now() - killed >= absl::Seconds(9));
  for (int i = 0; i < 2; ++i) {
    auto ended = (*cluster)->server(i).Wait(absl::Seconds(6));
    INFO((*cluster)->Logs());
    REQUIRE(ended.ok());
    CHECK(ended->code == 5);
  }
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

TEST_CASE("a coordinator stopped for longer than a lease declares nobody dead when it resumes",
          "[integration][coordinator]") {
  // The machine or the process stalls (SIGSTOP here): no heartbeat is read
  // for 3 leases. Declaring every member dead at once on resuming would fail
  // the job; the coordinator extends the leases instead.
  auto cluster = TestCluster::Start(
      "coordinator_stall", AspJob("  lease_timeout: 1s\n  heartbeat_interval: 100ms\n", "10s"),
      2);
  REQUIRE(cluster.ok());
  auto client = testing::Connect(**cluster, 0, absl::Seconds(30), absl::Seconds(10));
  REQUIRE(client.ok());
  std::vector<float> g(64, 1.0f);
  REQUIRE((*client)->PushDense({{"w", absl::MakeConstSpan(g)}}).get().ok());

  REQUIRE((*cluster)->coordinator().Signal(SIGSTOP).ok());
  absl::SleepFor(absl::Seconds(3));
  REQUIRE((*cluster)->coordinator().Signal(SIGCONT).ok());
  REQUIRE((*cluster)
              ->coordinator()
              .WaitForStderr("the coordinator did not run for", absl::Seconds(10))
              .ok());
  absl::SleepFor(absl::Seconds(2));  // two leases of heartbeats after it
  const std::string log = (*cluster)->coordinator().ReadStderr();
  INFO(log);
  CHECK_THAT(log, !Catch::Contains("lease expired"));
  CHECK_THAT(log, !Catch::Contains("DEAD"));
  for (int i = 0; i < 2; ++i) CHECK((*cluster)->server(i).Running());
  REQUIRE((*client)->PushDense({{"w", absl::MakeConstSpan(g)}}).get().ok());
  CHECK((*client)->Finish().ok());
}

}  // namespace
}  // namespace cairn
