// A worker that comes back under its id is a new incarnation (issue: faults
// the suite never reached, finding 1). Servers keep a push window per
// (group, worker, incarnation), so a process restarted under the same
// --worker-id, which numbers its pushes from 1 again, has every push applied;
// and a worker that left cleanly may join again under its id.
//
// Real coordinator, server and chaos workers on loopback; the exact oracle
// (oracle.h) over both lives' histories: nothing acknowledged is lost,
// nothing applied twice. One server, so each push is one RPC (see
// zombie_worker_test.cc).
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;

constexpr int kRestarted = 0;  // the worker killed (or leaving) and started again
constexpr int kSteady = 1;     // runs throughout

std::string JobYaml() {
  return absl::StrCat(R"(
cluster:
  servers: 1
  workers: 2
  partitions: 8
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 30s
  on_worker_loss: continue
rpc:
  deadline: 10s
consistency:
  mode: bsp
tables:
)", WorkloadTablesYaml());
}

size_t CountLines(const std::string& path) {
  const std::string text = testing::ReadFileOrEmpty(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::unique_ptr<Subprocess> Spawn(const testing::TestCluster& cluster, int id,
                                  const std::string& history_dir,
                                  const std::vector<std::string>& args) {
  auto worker = SpawnChaosWorker(cluster, id, 1'000'000'000, history_dir, args);
  INFO(worker.status().message());
  REQUIRE(worker.ok());
  return *std::move(worker);
}

// Waits for `worker` to end within `timeout` and returns how.
std::string Ended(Subprocess& worker, absl::Duration timeout) {
  absl::StatusOr<ExitStatus> end = worker.Wait(timeout);
  if (!end.ok()) return std::string(end.status().message());
  return end->ToString();
}

// The oracle over every history of `history_dir` against the job's values.
OracleReport CheckJob(const testing::TestCluster& cluster, const std::string& history_dir,
                      int64_t* acked_by_restarted) {
  const Workload w = CheckpointWorkload();
  absl::StatusOr<std::vector<HistoryRecord>> history = ReadHistoryDir(history_dir);
  INFO(history.status().message());
  REQUIRE(history.ok());
  *acked_by_restarted = 0;
  for (const HistoryRecord& r : *history) {
    *acked_by_restarted += r.worker == kRestarted && r.outcome == Outcome::kOk;
  }
  absl::StatusOr<JobValues> final_values = ReadFinalValues(cluster, w);
  INFO(final_values.status().message());
  REQUIRE(final_values.ok());
  return Check(w, *history, *final_values);
}

TEST_CASE("a worker killed and started again under its id keeps every push of its second life",
          "[reliability][integration][incarnation]") {
  auto cluster = testing::TestCluster::Start("worker_restart", JobYaml(), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  testing::TestCluster& c = **cluster;
  const std::string history_dir = c.dir() + "/history";
  std::filesystem::create_directories(history_dir);
  const std::string restarted_history =
      absl::StrCat(history_dir, "/worker-", kRestarted, ".jsonl");

  std::unique_ptr<Subprocess> steady = Spawn(c, kSteady, history_dir, {"--seconds", "12"});
  std::unique_ptr<Subprocess> first = Spawn(c, kRestarted, history_dir, {});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (CountLines(restarted_history) < 40 && absl::Now() < deadline && first->Running()) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  INFO(c.Logs() << first->ReadStderr());
  REQUIRE(CountLines(restarted_history) >= 40);  // 20 steps of two tables
  first->Kill();                                 // kill -9: no Finish, no leave
  const size_t first_life = CountLines(restarted_history);
  REQUIRE(c.coordinator()
              .WaitForStderr(absl::StrCat("worker ", kRestarted, " lost at clock"),
                             absl::Seconds(10))
              .ok());

  // Same --worker-id: the coordinator readmits it as incarnation 2.
  std::unique_ptr<Subprocess> second = Spawn(c, kRestarted, history_dir, {"--seconds", "4"});
  REQUIRE(c.coordinator()
              .WaitForStderr(
                  absl::StrCat("worker ", kRestarted, " registered again (incarnation 2)"),
                  absl::Seconds(10))
              .ok());
  INFO("second life: " << second->ReadStderr());
  CHECK(Ended(*second, absl::Seconds(30)) == "exit code 0");
  INFO("steady worker: " << steady->ReadStderr());
  CHECK(Ended(*steady, absl::Seconds(30)) == "exit code 0");
  const size_t second_life = CountLines(restarted_history) - first_life;
  CHECK(second_life >= 20);  // it trained in its second life

  int64_t acked = 0;
  const OracleReport report = CheckJob(c, history_dir, &acked);
  INFO(report.ToString());
  std::cout << "worker restarted under its id (BSP): " << first_life << " then " << second_life
            << " pushes recorded, " << acked << " acknowledged; lost " << report.lost
            << ", duplicates " << report.duplicates << ", unexpected " << report.unexpected
            << std::endl;
  CHECK(report.lost == 0);  // before incarnations: the second life's first pushes
  CHECK(report.duplicates == 0);
  CHECK(report.unexpected == 0);
  CHECK(report.checksum_mismatches == 0);
  CHECK(report.unexplained.ok());
  // Both lives sent values through a shared region of their own
  // (docs/shared-memory.md): the killed one mid-training, the second one's
  // replacing it.
  const std::string server_log = c.server(0).ReadStderr();
  size_t regions = 0;
  const std::string offered = absl::StrCat("worker ", kRestarted, " sends values through a");
  for (size_t at = server_log.find(offered); at != std::string::npos;
       at = server_log.find(offered, at + 1)) {
    ++regions;
  }
  CHECK(regions == 2);
}

TEST_CASE("a worker that left cleanly joins again under its id and trains",
          "[reliability][integration][incarnation]") {
  auto cluster = testing::TestCluster::Start("worker_rejoin", JobYaml(), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  testing::TestCluster& c = **cluster;
  const std::string history_dir = c.dir() + "/history";
  std::filesystem::create_directories(history_dir);

  std::unique_ptr<Subprocess> steady = Spawn(c, kSteady, history_dir, {"--seconds", "10"});
  auto first = SpawnChaosWorker(c, kRestarted, 30, history_dir);  // 30 steps, then Finish
  REQUIRE(first.ok());
  INFO("first life: " << (*first)->ReadStderr());
  REQUIRE(Ended(**first, absl::Seconds(30)) == "exit code 0");
  REQUIRE(c.coordinator()
              .WaitForStderr(" left at clock", absl::Seconds(5))
              .ok());

  // Before incarnations the servers kept a left id out for good: this
  // worker hung at its first clock and failed FAILED_PRECONDITION.
  const absl::Time rejoined = absl::Now();
  std::unique_ptr<Subprocess> second = Spawn(c, kRestarted, history_dir, {"--seconds", "3"});
  INFO("second life: " << second->ReadStderr());
  CHECK(Ended(*second, absl::Seconds(20)) == "exit code 0");
  const absl::Duration took = absl::Now() - rejoined;
  INFO("steady worker: " << steady->ReadStderr());
  CHECK(Ended(*steady, absl::Seconds(30)) == "exit code 0");

  int64_t acked = 0;
  const OracleReport report = CheckJob(c, history_dir, &acked);
  INFO(report.ToString());
  std::cout << "worker rejoined after a clean leave (BSP): second life ran "
            << absl::FormatDuration(took) << "; worker " << kRestarted << " acknowledged "
            << acked << " pushes over both lives; lost " << report.lost << ", duplicates "
            << report.duplicates << std::endl;
  CHECK(acked > 30 * 2);  // both lives pushed and were acknowledged
  CHECK(report.lost == 0);
  CHECK(report.duplicates == 0);
  CHECK(report.unexpected == 0);
  CHECK(report.unexplained.ok());
}

}  // namespace
}  // namespace cairn::reliability
