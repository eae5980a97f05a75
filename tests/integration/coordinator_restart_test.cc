// Field case B13 and fault scenario T4 (ci tier): the coordinator is killed
// with -9 in the middle of training and started again 4 s later on the same
// address, from its persisted state (cluster.state_dir). Real processes: a
// coordinator, 2 cairn-servers, 2 client-library workers in this process.
//
//   - the data path goes on during the outage (workers keep stepping);
//   - the restarted coordinator restores the members: same ids, same map
//     version (not reset), servers and workers re-attach by heartbeat
//     without restarting, and nobody is declared dead, also after the
//     restart's lease grace has run out;
//   - training completes with every push applied once: the dense parameter
//     (SGD, learning rate 1, gradient 1 per worker per step) ends at exactly
//     -2 * steps; under BSP each step's pull also reads exactly -2 * step, so
//     no barrier was completed twice or skipped.
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cairn/v1/coordinator.pb.h"
#include "common/coordinator_client.h"
#include "tests/integration/client_threads.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::Failures;
using testing::TestCluster;

constexpr int kWorkers = 2;
constexpr int kSteps = 60;
constexpr int kKillAtStep = 10;  // worker 0's step at which the coordinator dies
constexpr int kGateStep = 50;    // no worker passes it before the coordinator is back
constexpr absl::Duration kStepPause = absl::Milliseconds(100);
constexpr absl::Duration kOutage = absl::Seconds(4);
constexpr absl::Duration kLease = absl::Seconds(3);

std::string Yaml(const std::string& mode, const std::string& storage) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 2
  partitions: 8
  lease_timeout: 3s
  heartbeat_interval: 200ms
  startup_timeout: 30s
)", storage, R"(rpc:
  deadline: 20s
consistency:
  mode: )", mode, R"(
tables:
  - name: w
    kind: dense
    shape: [4]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
)");
}

struct Snapshot {
  uint64_t map_version = 0;
  std::vector<std::string> members;  // "server 0 ALIVE 127.0.0.1:port", by (role, id)
};

Snapshot Observe(const TestCluster& cluster) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  absl::StatusOr<v1::ListMembersResponse> list = coordinator.ListMembers(absl::Seconds(10));
  INFO(list.status().message());
  REQUIRE(list.ok());
  Snapshot s;
  s.map_version = list->map().version();
  for (const v1::Member& m : list->members()) {
    s.members.push_back(absl::StrCat(m.role() == v1::MEMBER_ROLE_SERVER ? "server " : "worker ",
                                     m.id(), " ", v1::MemberState_Name(m.state()), " ",
                                     m.address()));
  }
  return s;
}

double Metric(const TestCluster& cluster, const std::string& series) {
  absl::StatusOr<std::string> body = testing::HttpGet(cluster.coordinator_metrics_port(), "/metrics");
  REQUIRE(body.ok());
  absl::StatusOr<double> v = testing::MetricValue(*body, series);
  INFO(series << ": " << v.status().message());
  REQUIRE(v.ok());
  return *v;
}

// Trains kSteps steps on every worker while the coordinator is killed and
// restarted; checks everything the file comment lists.
void RunB13(const std::string& name, const std::string& mode, bool explicit_state_dir) {
  absl::StatusOr<std::string> data = testing::MakeTempDir(name + "_data");
  REQUIRE(data.ok());
  const std::string storage =
      explicit_state_dir
          ? absl::StrCat("  state_dir: ", *data, "/coordinator-state\n")
          : "";  // the default: <checkpoint.dir>/coordinator, shared with the records
  std::string yaml = Yaml(mode, storage);
  if (!explicit_state_dir) absl::StrAppend(&yaml, "checkpoint:\n  dir: ", *data, "/ckpt\n");
  auto cluster = TestCluster::Start(name, yaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  INFO("logs in " << c.dir());

  auto clients = testing::ConnectWorkers(c, kWorkers);
  INFO(clients.status().message() << "\n" << c.Logs());
  REQUIRE(clients.ok());
  const bool bsp = mode == "bsp";

  Failures failures;
  std::atomic<int> steps[kWorkers] = {0, 0};
  std::atomic<bool> restarted{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      Client& client = *(*clients)[w];
      std::vector<float> values(4);
      const std::vector<float> grad(4, 1.0f);
      for (int step = 0; step < kSteps; ++step) {
        if (step == kGateStep) {
          const absl::Time until = absl::Now() + absl::Seconds(30);
          while (!restarted.load() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(20));
        }
        absl::Status s = client.PullDense({{"w", absl::MakeSpan(values)}}).get();
        failures.Check(s, absl::StrCat("worker ", w, " pull at step ", step));
        if (!s.ok()) return;
        // BSP, sum, lr 1: before step t every worker's t pushes are in, once.
        if (bsp && values[0] != -2.0f * step) {
          failures.Add(absl::StrCat("worker ", w, " step ", step, " read ", values[0],
                                    ", expected ", -2 * step));
        }
        s = client.PushDense({{"w", grad}}).get();
        failures.Check(s, absl::StrCat("worker ", w, " push at step ", step));
        if (!s.ok()) return;
        s = client.Clock();
        failures.Check(s, absl::StrCat("worker ", w, " clock at step ", step));
        if (!s.ok()) return;
        steps[w].store(step + 1);
        absl::SleepFor(kStepPause);
      }
    });
  }

  // Wait for worker 0 to reach kKillAtStep, note the membership, kill -9.
  const absl::Time training_start = absl::Now();
  const absl::Time wait_until = absl::Now() + absl::Seconds(30);
  while (steps[0].load() < kKillAtStep && absl::Now() < wait_until && failures.count() == 0) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  REQUIRE(steps[0].load() >= kKillAtStep);
  const Snapshot before = Observe(c);
  REQUIRE(before.members.size() == 4);
  const testing::ExitStatus killed = c.KillCoordinator();
  CHECK(killed.signal == SIGKILL);
  const int steps_at_kill = steps[0].load() + steps[1].load();
  const double steps_per_second_before =
      steps_at_kill / absl::ToDoubleSeconds(absl::Now() - training_start);
  absl::SleepFor(kOutage);
  const int steps_at_restart = steps[0].load() + steps[1].load();

  const absl::Time restart_time = absl::Now();
  absl::Status restarted_ok = c.RestartCoordinator();
  INFO(restarted_ok.message() << "\n" << c.Logs());
  REQUIRE(restarted_ok.ok());
  restarted.store(true);
  // Every member alive at the restart comes back by heartbeat, unprompted.
  absl::Status back = c.coordinator().WaitForStderr(
      "all 4 members alive at the restart re-attached", absl::Seconds(10));
  INFO(back.message() << "\n" << c.Logs());
  CHECK(back.ok());
  const double reattach_seconds = absl::ToDoubleSeconds(absl::Now() - restart_time);

  for (std::thread& t : threads) t.join();
  INFO(failures.Describe() << "\n" << c.Logs());
  REQUIRE(failures.count() == 0);
  for (int w = 0; w < kWorkers; ++w) CHECK((*clients)[w]->clock() == kSteps);

  // Past the restart's lease grace, nobody was declared dead.
  const absl::Duration waited = absl::Now() - restart_time;
  if (waited < kLease + absl::Seconds(1)) absl::SleepFor(kLease + absl::Seconds(1) - waited);
  const Snapshot after = Observe(c);
  CHECK(after.members == before.members);  // same ids, states and addresses
  CHECK(after.map_version == before.map_version);  // not reset, and nothing changed
  const std::string log = c.coordinator().ReadStderr();
  CHECK(absl::StrContains(log, "restored the state of job"));
  CHECK_FALSE(absl::StrContains(log, "DEAD"));
  CHECK_FALSE(absl::StrContains(log, "registered again"));  // no member had to re-register
  CHECK(Metric(c, "cairn_coordinator_members{role=\"server\",state=\"alive\"}") == 2);
  CHECK(Metric(c, "cairn_coordinator_members{role=\"worker\",state=\"alive\"}") == 2);
  CHECK(Metric(c, "cairn_coordinator_lease_expirations_total{role=\"server\"}") == 0);
  CHECK(Metric(c, "cairn_coordinator_lease_expirations_total{role=\"worker\"}") == 0);
  CHECK(Metric(c, "cairn_coordinator_map_version") == before.map_version);
  for (int i = 0; i < c.num_servers(); ++i) {
    CHECK(c.server(i).Running());
    CHECK_FALSE(absl::StrContains(c.server(i).ReadStderr(), "lost the coordinator"));
  }

  // Every push applied exactly once.
  std::vector<float> values(4);
  REQUIRE((*clients)[0]->PullDense({{"w", absl::MakeSpan(values)}}).get().ok());
  for (float v : values) CHECK(v == -2.0f * kSteps);

  if (!explicit_state_dir) {
    // The checkpoint records share the restored coordinator's store.
    CoordinatorClient coordinator(c.coordinator_address(), 64 << 20);
    v1::CheckpointRequest request;
    request.set_timeout_ms(20000);
    absl::StatusOr<v1::CheckpointResponse> ckpt = coordinator.Checkpoint(request, absl::Seconds(30));
    INFO(ckpt.status().message() << "\n" << c.Logs());
    REQUIRE(ckpt.ok());
    CHECK(ckpt->record().clock() == kSteps);
  }

  for (auto& client : *clients) CHECK(client->Finish().ok());
  const Snapshot finished = Observe(c);
  CHECK(finished.map_version == before.map_version + 2);  // the two leaves bump it
  const double steps_per_second_during =
      (steps_at_restart - steps_at_kill) / absl::ToDoubleSeconds(kOutage);
  std::cout << absl::StrFormat(
      "%s: coordinator down %s; steps/s (both workers) %.1f before, %.1f during the outage "
      "(%.0f%%); all members re-attached %.2f s after the restart; map version %d kept; 0 "
      "members declared dead\n",
      name, absl::FormatDuration(kOutage), steps_per_second_before, steps_per_second_during,
      100.0 * steps_per_second_during / steps_per_second_before, reattach_seconds,
      before.map_version);
  // The data path needs no coordinator: the workers kept stepping (servers
  // fence themselves once their lease cannot be renewed, so not for the
  // whole outage).
  CHECK(steps_at_restart > steps_at_kill);
}

TEST_CASE("B13: an ASP job goes on through a coordinator killed with -9 and restarted on the "
          "same address",
          "[integration][cases][B13]") {
  RunB13("b13_asp", "asp", /*explicit_state_dir=*/true);
}

TEST_CASE("B13: a BSP job keeps its exact step count through a coordinator restart",
          "[integration][cases][B13]") {
  RunB13("b13_bsp", "bsp", /*explicit_state_dir=*/false);
}

}  // namespace
}  // namespace cairn
