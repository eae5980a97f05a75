// A group restored from a checkpoint carries the checkpoint's clock (issue:
// faults the suite never reached, finding 4; field case C01 is the same
// kind). With one copy of every group, the only server is stalled past its
// lease: declared dead, it drops what it held and registers again, empty.
// The coordinator must restore the group onto it at once (there is no other
// live server), and the restored server's iteration boundary must be the
// checkpoint's clock: the next checkpoint is recorded at a clock at or past
// it, and a resume goes on from there, not from clock 1 (which would train
// the clocks before it twice).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;
using testing::TestCluster;

std::string JobYaml(const std::string& ckpt, const std::string& resume) {
  return absl::StrCat(R"(
cluster:
  servers: 1
  workers: 2
  partitions: 8
  replication: 1
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 30s
  state_dir: none
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
)", WorkloadTablesYaml(), R"(checkpoint:
  dir: )", ckpt, R"(
  every_clocks: 10
  keep: 3
  resume: ")", resume, R"("
)");
}

std::vector<std::unique_ptr<Subprocess>> SpawnWorkers(const TestCluster& cluster,
                                                      const std::vector<std::string>& args,
                                                      int64_t steps = 1'000'000'000) {
  const std::string history = cluster.dir() + "/history";
  std::filesystem::create_directories(history);
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int id : {0, 1}) {
    auto w = SpawnChaosWorker(cluster, id, steps, history, args);
    REQUIRE(w.ok());
    workers.push_back(*std::move(w));
  }
  return workers;
}

void WaitExit0(std::vector<std::unique_ptr<Subprocess>>& workers, const TestCluster& cluster) {
  for (auto& w : workers) {
    absl::StatusOr<ExitStatus> end = w->Wait(absl::Seconds(60));
    INFO(w->ReadStderr() << cluster.Logs());
    REQUIRE(end.ok());
    CHECK(end->ToString() == "exit code 0");
  }
}

TEST_CASE("a group restored from a checkpoint goes on at the checkpoint's clock, and a resume "
          "continues from the next checkpoint",
          "[reliability][checkpoint][failover]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("restore_clock");
  REQUIRE(dir.ok());
  const std::string ckpt = *dir + "/ckpt";
  int64_t restored_at = -1;
  LoggedRecord after;
  {
    auto cluster = TestCluster::Start("restore_clock", JobYaml(ckpt, "none"), 1);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    TestCluster& c = **cluster;
    std::vector<std::unique_ptr<Subprocess>> workers = SpawnWorkers(c, {"--seconds", "8"});
    REQUIRE(
        c.coordinator().WaitForStderr("checkpoint at clock 20 complete", absl::Seconds(30)).ok());

    // Stall the only server past its lease: declared dead, it drops its
    // state and registers again, empty, under a new id.
    REQUIRE(c.server(0).Signal(SIGSTOP).ok());
    REQUIRE(c.coordinator().WaitForStderr("lease expired: DEAD", absl::Seconds(10)).ok());
    REQUIRE(c.server(0).Signal(SIGCONT).ok());
    // Restored onto it as soon as it is back, not at some later expiry.
    const absl::Time back = absl::Now();
    REQUIRE(c.coordinator().WaitForStderr("lost every copy: restored onto server",
                                          absl::Seconds(10)).ok());
    const absl::Duration to_restore = absl::Now() - back;
    std::vector<LoggedRecord> before = CompletedCheckpoints(c.coordinator().ReadStderr());
    REQUIRE(!before.empty());
    restored_at = before.back().clock;
    INFO(c.server(0).ReadStderr());
    CHECK(c.server(0)
              .WaitForStderr(absl::StrCat("iteration boundary at the restored checkpoint's clock ",
                                          restored_at),
                             absl::Seconds(5))
              .ok());
    WaitExit0(workers, c);
    // The checkpoints after the restore are at clocks past it.
    const std::vector<LoggedRecord> all = CompletedCheckpoints(c.coordinator().ReadStderr());
    REQUIRE(all.size() > before.size());
    after = all.back();
    std::cout << "restore: group back " << absl::FormatDuration(to_restore)
              << " after its server re-registered, from the checkpoint at clock " << restored_at
              << "; checkpoints after it at clocks";
    for (size_t i = before.size(); i < all.size(); ++i) {
      std::cout << " " << all[i].clock;
      CHECK(all[i].clock > restored_at);
    }
    std::cout << std::endl;
    CHECK(to_restore < absl::Seconds(3));
  }

  // A resume picks the newest record and goes on from its clock.
  {
    auto cluster = TestCluster::Start("restore_clock_resume", JobYaml(ckpt, "latest"), 1);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    std::vector<std::unique_ptr<Subprocess>> workers =
        SpawnWorkers(**cluster, {}, after.clock + 4);
    WaitExit0(workers, **cluster);
    const std::optional<LoggedRecord> resumed =
        ResumedFrom((*cluster)->coordinator().ReadStderr());
    REQUIRE(resumed.has_value());
    CHECK(resumed->record == after.record);
    CHECK(resumed->clock == after.clock);
    for (auto& w : workers) {
      CHECK(absl::StrContains(w->ReadStderr(),
                              absl::StrCat("clocks ", after.clock, "..", after.clock + 4)));
    }
  }
}

}  // namespace
}  // namespace cairn::reliability
