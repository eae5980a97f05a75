// Field case B01 and fault scenario T1 (one kill, ci tier), T3 (a network
// cut) and a stall: a server killed with -9, cut off or frozen under BSP
// training with replication 2. The coordinator promotes the backups of its
// replica groups, the workers' pushes and pulls retry on the new primaries,
// a server declared dead rejoins empty, training finishes, and the
// exact-arithmetic oracle finds every acknowledged push applied exactly
// once: lost = 0, duplicates = 0, unexpected = 0.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/partitioning.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/netns.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::TestCluster;

std::string FailoverJobYaml(int servers, int replication) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, R"(
  workers: 2
  partitions: 12
  replication: )", replication, R"(
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
)", WorkloadTablesYaml());
}

// Waits (up to 60 s) until worker 0's history holds `bytes`: training runs.
void WaitForHistory(const std::string& dir, size_t bytes) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline &&
         testing::ReadFileOrEmpty(dir + "/worker-0.jsonl").size() < bytes) {
    absl::SleepFor(absl::Milliseconds(20));
  }
}

// Waits for every chaos worker to end; each must exit 0.
void WaitForWorkers(std::vector<std::unique_ptr<testing::Subprocess>>& workers,
                    const TestCluster& cluster) {
  for (auto& w : workers) {
    auto ended = w->Wait(absl::Seconds(180));
    INFO(w->ReadStderr() << cluster.Logs());
    REQUIRE(ended.ok());
    CHECK(ended->code == 0);
  }
}

// The oracle on the job's final values: nothing lost, doubled or
// unexpected, and the values of `steps` clocks bit for bit.
OracleReport CheckExact(const TestCluster& cluster, const std::string& dir, int64_t steps) {
  const Workload workload = CheckpointWorkload();
  auto final_values = ReadFinalValues(cluster, workload);
  REQUIRE(final_values.ok());
  auto history = ReadHistoryDir(dir);
  REQUIRE(history.ok());
  const OracleReport report = Check(workload, *history, *final_values);
  INFO(report.ToString());
  CHECK(report.lost == 0);
  CHECK(report.duplicates == 0);
  CHECK(report.unexpected == 0);
  CHECK(report.ok_all());
  ExpectedStates expected(workload);
  CHECK(BitwiseEqual(expected.At(steps), *final_values));
  return report;
}

// A job of `servers` servers under BSP with replication 2 and two chaos
// workers of `steps` steps each, once it trains (worker 0's history holds
// 20,000 bytes).
struct TrainingJob {
  std::string dir;  // the workers' histories
  std::unique_ptr<TestCluster> cluster;
  std::vector<std::unique_ptr<testing::Subprocess>> workers;
};

TrainingJob StartTrainingJob(const std::string& name, int servers, int64_t steps) {
  TrainingJob job;
  auto dir = testing::MakeTempDir(name);
  REQUIRE(dir.ok());
  job.dir = *dir;
  auto cluster = TestCluster::Start(name, FailoverJobYaml(servers, 2), servers);
  REQUIRE(cluster.ok());
  job.cluster = *std::move(cluster);
  auto workers = SpawnChaosWorkers(*job.cluster, steps, job.dir);
  REQUIRE(workers.ok());
  job.workers = *std::move(workers);
  WaitForHistory(job.dir, 20000);
  return job;
}

TEST_CASE("B01: a server killed with -9 under BSP with replication 2 loses no acknowledged push",
          "[reliability][failover][cases]") {
  constexpr int64_t kSteps = 1500;
  TrainingJob job = StartTrainingJob("failover_b01", 3, kSteps);
  TestCluster& c = *job.cluster;
  const std::string& dir = job.dir;
  auto& workers = job.workers;
  const absl::Time killed = absl::Now();
  c.server(1).Kill();
  WaitForWorkers(workers, c);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - killed);
  const std::string coordinator_log = c.coordinator().ReadStderr();
  INFO(coordinator_log);
  CHECK(absl::StrContains(coordinator_log, "promoted"));

  const OracleReport report = CheckExact(c, dir, kSteps);
  CHECK(report.ok > 0);
  std::printf("B01 failover: %lld steps x 2 workers, server 1 killed; %lld pushes acknowledged, "
              "lost %lld, duplicates %lld; workers done %.1f s after the kill\n",
              static_cast<long long>(kSteps), static_cast<long long>(report.ok),
              static_cast<long long>(report.lost), static_cast<long long>(report.duplicates),
              seconds);
}

TEST_CASE("a replacement server joins the groups left with one copy, receives their state, and "
          "takes over when the promoted primary dies too",
          "[reliability][failover]") {
  constexpr int64_t kSteps = 3000;
  TrainingJob job = StartTrainingJob("failover_rejoin", 3, kSteps);
  TestCluster& c = *job.cluster;
  const std::string& dir = job.dir;
  auto& workers = job.workers;
  c.server(1).Kill();  // group 1 -> server 2
  REQUIRE(c.StartServer().ok());  // server id 3: joins group 1 (and any other short one)
  REQUIRE(c.coordinator()
              .WaitForStderr("server 3 holds replica group 1 and backs it up now",
                             absl::Seconds(60))
              .ok());
  // Server 2 is primary of group 1 now and of its own group 2, until the
  // coordinator moves group 1's primary to server 3 once server 3 holds its
  // groups (primaries balanced). Kill server 2: group 1 is served from
  // server 3's copy either way (promoted at the failover, or by the move
  // before it), and group 2 from server 0's.
  WaitForHistory(dir, testing::ReadFileOrEmpty(dir + "/worker-0.jsonl").size() + 20000);
  c.server(2).Kill();
  WaitForWorkers(workers, c);
  const std::string log = c.coordinator().ReadStderr();
  INFO(log);
  CHECK(absl::StrContains(log, "server 3 promoted to primary"));
  CheckExact(c, dir, kSteps);
}

// Waits until the coordinator's log says `text`, up to `timeout`; returns
// the seconds waited.
double WaitForCoordinator(TestCluster& c, const std::string& text, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  absl::Status s = c.coordinator().WaitForStderr(text, timeout);
  INFO(c.Logs());
  REQUIRE(s.ok());
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Server 1 was declared dead, dropped what it held and registered again as
// server 3; once it backs up group 1 (whose primary is server 2 since the
// failover, until the coordinator moves it to server 3 to balance
// primaries), kill server 2, so that group 1 is served from server 3's copy
// from then on (promoted by the failover or by the move), and check the job
// exactly.
void KillTheOtherCopyAndCheck(TestCluster& c,
                              std::vector<std::unique_ptr<testing::Subprocess>>& workers,
                              const std::string& dir, int64_t steps) {
  WaitForCoordinator(c, "server 3 holds replica group 1 and backs it up now", absl::Seconds(60));
  WaitForHistory(dir, testing::ReadFileOrEmpty(dir + "/worker-0.jsonl").size() + 20000);
  for (auto& w : workers) REQUIRE(w->Running());  // the kill lands during training
  c.server(2).Kill();
  WaitForWorkers(workers, c);
  INFO(c.Logs());
  CHECK_THAT(c.coordinator().ReadStderr(), Catch::Contains("server 3 promoted to primary"));
  CHECK(c.server(1).Running());  // the same process, serving as server 3
  CheckExact(c, dir, steps);
}

TEST_CASE("a server stalled for longer than its lease is declared dead, rejoins empty under a "
          "new id when it resumes, and its new copy is exact",
          "[reliability][failover]") {
  // A stall (SIGSTOP, as a long pause would): no heartbeat, no answer. Its
  // fence passes, a backup is promoted; on SIGCONT the coordinator answers
  // its next heartbeat with NOT_FOUND, and it drops what it held.
  constexpr int64_t kSteps = 3000;
  TrainingJob job = StartTrainingJob("failover_stall", 3, kSteps);
  TestCluster& c = *job.cluster;
  const std::string& dir = job.dir;
  auto& workers = job.workers;
  REQUIRE(c.server(1).Signal(SIGSTOP).ok());
  WaitForCoordinator(c, "server 1 DEAD, server 2 promoted to primary", absl::Seconds(30));
  absl::SleepFor(absl::Seconds(1));
  REQUIRE(c.server(1).Signal(SIGCONT).ok());
  REQUIRE(c.server(1).WaitForStderr("registers again, empty", absl::Seconds(20)).ok());
  CHECK_THAT(c.server(1).ReadStderr(), Catch::Contains("declared server 1 dead"));
  KillTheOtherCopyAndCheck(c, workers, dir, kSteps);
}

TEST_CASE("after a failover and a rejoin a group's primary moves to the rejoined server, and the "
          "server it left keeps an exact copy",
          "[reliability][failover]") {
  // 2 servers, r = 2: server 1 dies, server 0 is primary of both groups; a
  // replacement (server 2) joins both, and once it holds them the
  // coordinator moves group 0's primary to it. Then the new primary dies:
  // server 0, which backed group 0 up since the move, serves it again, and
  // the job ends exact.
  constexpr int64_t kSteps = 3000;
  TrainingJob job = StartTrainingJob("failover_move_back", 2, kSteps);
  TestCluster& c = *job.cluster;
  const std::string& dir = job.dir;
  auto& workers = job.workers;
  c.server(1).Kill();
  WaitForCoordinator(c, "server 1 DEAD, server 0 promoted to primary", absl::Seconds(30));
  REQUIRE(c.StartServer().ok());  // server 2
  WaitForCoordinator(c,
                     "group 0 (partitions 0,2,4,6,8,10): server 2 promoted to primary in place "
                     "of server 0, which backs it up now (primaries balanced: server 0 held 2 "
                     "groups, server 2 none)",
                     absl::Seconds(60));
  for (auto& w : workers) REQUIRE(w->Running());  // the move came during training
  REQUIRE(c.server(0)
              .WaitForStderr("server 0 backs up replica group 0 now; server 2 is its primary",
                             absl::Seconds(10))
              .ok());
  REQUIRE(c.server(2)
              .WaitForStderr("server 2 is now primary of replica group 0", absl::Seconds(10))
              .ok());
  WaitForHistory(dir, testing::ReadFileOrEmpty(dir + "/worker-0.jsonl").size() + 20000);
  for (auto& w : workers) REQUIRE(w->Running());
  c.server(2).Kill();
  WaitForCoordinator(c, "server 2 DEAD, server 0 promoted to primary", absl::Seconds(30));
  WaitForWorkers(workers, c);
  INFO(c.Logs());
  CheckExact(c, dir, kSteps);
}

TEST_CASE("RELIABILITY T3: a server cut off the network for longer than its lease is declared "
          "dead, rejoins empty when the cut heals, and its new copy is exact",
          "[reliability][failover][network]") {
  // Server 1 runs in a network namespace of its own, joined to the rest by
  // a veth pair; the cut drops every frame both ways, silently.
  testing::EnterPrivateNetworkOrSkip();
  auto peer = testing::NetnsPeer::Create();
  REQUIRE(peer.ok());
  constexpr int64_t kSteps = 3000;
  auto dir = testing::MakeTempDir("failover_netcut");
  REQUIRE(dir.ok());
  auto cluster = TestCluster::Start("failover_netcut", FailoverJobYaml(3, 2), 0, {},
                                    testing::NetnsPeer::kHostAddress);
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  REQUIRE(c.StartServer().ok());
  REQUIRE(c.StartServer({}, (*peer)->EnterCommand(), testing::NetnsPeer::kPeerHost).ok());
  REQUIRE(c.StartServer().ok());
  auto workers = SpawnChaosWorkers(c, kSteps, *dir);
  REQUIRE(workers.ok());
  WaitForHistory(*dir, 20000);

  REQUIRE((*peer)->Cut().ok());
  const absl::Time cut = absl::Now();
  const double declared =
      WaitForCoordinator(c, "server 1 DEAD, server 2 promoted to primary", absl::Seconds(30));
  // Training goes on without server 1 while the cut lasts: calls stuck on
  // the silent connection fail within about a lease (keepalive) and go to
  // the promoted primary.
  const size_t at_promotion = testing::ReadFileOrEmpty(*dir + "/worker-0.jsonl").size();
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  while (testing::ReadFileOrEmpty(*dir + "/worker-0.jsonl").size() <= at_promotion &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const double resumed = absl::ToDoubleSeconds(absl::Now() - cut);
  CHECK(testing::ReadFileOrEmpty(*dir + "/worker-0.jsonl").size() > at_promotion);
  CHECK(resumed < 6.0);  // lease 2 s + keepalive 1 + 1 s + retry backoff, not the 20 s deadline
  absl::SleepFor(std::max(absl::ZeroDuration(), cut + absl::Seconds(5) - absl::Now()));
  CHECK(c.server(1).Running());
  REQUIRE((*peer)->Heal().ok());
  const absl::Time healed = absl::Now();
  REQUIRE(c.server(1).WaitForStderr("registers again, empty", absl::Seconds(20)).ok());
  WaitForCoordinator(c, "server 3 holds replica group 1 and backs it up now", absl::Seconds(60));
  const double rejoined = absl::ToDoubleSeconds(absl::Now() - healed);
  KillTheOtherCopyAndCheck(c, *workers, *dir, kSteps);
  std::printf("T3 network cut: declared dead %.2f s after the cut (lease 2 s), training went on "
              "%.2f s after the cut, cut healed after 5 s, backing up again %.2f s after the "
              "heal\n",
              declared, resumed, rejoined);
}

TEST_CASE("replication 1: a dead server's groups come back from the last complete checkpoint "
          "onto a live server and the job goes on, the loss is logged",
          "[reliability][failover][checkpoint]") {
  constexpr int64_t kSteps = 600;
  constexpr uint32_t kPartitions = 12;
  auto dir = testing::MakeTempDir("failover_r1");
  REQUIRE(dir.ok());
  std::string yaml = FailoverJobYaml(2, 1);
  yaml += absl::StrCat("checkpoint:\n  dir: ", *dir, "/ckpt\n  every_clocks: 20\n");
  yaml = absl::StrReplaceAll(yaml, {{"  startup_timeout: 30s\n",
                                     "  startup_timeout: 30s\n  state_dir: none\n"}});
  auto cluster = TestCluster::Start("failover_r1", yaml, 2);
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  auto workers = SpawnChaosWorkers(c, kSteps, *dir);
  REQUIRE(workers.ok());
  REQUIRE(c.coordinator().WaitForStderr("checkpoint at clock 40 complete", absl::Seconds(60)).ok());
  c.server(1).Kill();
  WaitForWorkers(*workers, c);
  const std::string log = c.coordinator().ReadStderr();
  INFO(log);
  CHECK(absl::StrContains(log, "lost every copy: restored onto server 0 from the checkpoint"));
  const Workload workload = CheckpointWorkload();
  auto final_values = ReadFinalValues(c, workload);
  REQUIRE(final_values.ok());
  ExpectedStates expected_states(workload);
  const JobValues& expected = expected_states.At(kSteps);
  // Group 0 (server 0's, the even partitions) lost nothing; group 1 came
  // back from a checkpoint, so some of its updates are gone.
  const TableValues& want = expected.at("dense");
  const TableValues& got = final_values->at("dense");
  REQUIRE(want.values.size() == got.values.size());
  const uint64_t chunks = NumChunks(want.values.size(), 5000);
  int64_t kept_same = 0, differ = 0;
  for (size_t e = 0; e < want.values.size(); ++e) {
    const uint32_t p =
        DensePartition(e / 5000, chunks, kPartitions, DensePartitionOffset("dense", kPartitions));
    if (p % 2 == 0) {
      kept_same += want.values[e] == got.values[e];
      if (want.values[e] != got.values[e]) FAIL_CHECK("group 0 element " << e << " differs");
    } else {
      differ += want.values[e] != got.values[e];
    }
  }
  CHECK(kept_same > 0);
  CHECK(differ > 0);
}

}  // namespace
}  // namespace cairn::reliability
