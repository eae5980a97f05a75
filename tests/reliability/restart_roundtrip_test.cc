// fault scenario T9, restart round-trip: a BSP job of 2 servers and 2 chaos
// workers runs to clock 10 with a checkpoint every 2 clocks and is stopped
// gracefully (SIGTERM). Then:
//   - resume: latest starts every worker at clock 10 with the values of the
//     straight run, bit for bit (and the oracle's ExpectedAtClock(10));
//   - resume: 6 starts at clock 6 with ExpectedAtClock(6);
//   - that branch runs on to clock 10 and again holds ExpectedAtClock(10);
//     its checkpoints are newer records than those of the first run
//     (ListCheckpoints and `cairnctl checkpoints` list the new one last).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/coordinator_client.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;
using testing::TestCluster;

constexpr char kCtl[] = CAIRN_BINARY_DIR "/bin/cairnctl";
constexpr int kServers = 2;

std::unique_ptr<TestCluster> StartJob(const std::string& name, const std::string& ckpt,
                                      const std::string& resume) {
  auto cluster = TestCluster::Start(name, CheckpointJobYaml({ckpt, 2, 3, resume}), kServers);
  INFO(name << ": " << cluster.status().message());
  REQUIRE(cluster.ok());
  return *std::move(cluster);
}

// Starts the chaos workers toward `steps`, lets the observer read the values
// the job starts from, and waits for the workers to finish.
Observation RunWorkers(TestCluster& cluster, int64_t steps) {
  const std::string history = cluster.dir() + "/history";
  std::filesystem::create_directories(history);
  auto workers = SpawnChaosWorkers(cluster, steps, history);
  REQUIRE(workers.ok());
  absl::StatusOr<Observation> seen = ObserveAndLeave(cluster, CheckpointWorkload());
  if (!seen.ok()) FAIL("observer: " << seen.status().message() << "\n" << cluster.Logs());
  for (auto& w : *workers) {
    absl::StatusOr<ExitStatus> ended = w->Wait(absl::Seconds(40));
    INFO(w->ReadStderr() << cluster.Logs());
    REQUIRE(ended.ok());
    REQUIRE(ended->ToString() == "exit code 0");
    // cairn-chaos-worker logs the clocks it runs: from the job's to --steps.
    CHECK(w->ReadStderr().find(absl::StrCat("clocks ", seen->clock, "..", steps)) !=
          std::string::npos);
  }
  return *std::move(seen);
}

std::vector<v1::CheckpointRecord> ListRecords(const TestCluster& cluster) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  absl::StatusOr<v1::ListCheckpointsResponse> list = coordinator.ListCheckpoints(absl::Seconds(5));
  INFO(list.status().message());
  REQUIRE(list.ok());
  return {list->records().begin(), list->records().end()};
}

uint64_t RecordBytes(const v1::CheckpointRecord& r) {
  uint64_t bytes = 0;
  for (const v1::CheckpointPartition& p : r.partitions()) bytes += p.bytes();
  return bytes;
}

TEST_CASE("T9: a gracefully stopped job resumes bit-identical from the latest and from an older "
          "checkpoint, and a branch from the older one writes newer records",
          "[reliability][checkpoint]") {
  const Workload w = CheckpointWorkload();
  absl::StatusOr<std::string> dir = testing::MakeTempDir("restart_roundtrip");
  REQUIRE(dir.ok());
  const std::string ckpt = *dir + "/ckpt";

  // 1. A straight run to clock 10, stopped gracefully once clock 10 is in.
  JobValues straight;
  uint64_t first_record_at_10 = 0;
  {
    auto cluster = StartJob("roundtrip_straight", ckpt, "none");
    const Observation start = RunWorkers(*cluster, 10);
    CHECK(start.clock == 0);
    REQUIRE(cluster->coordinator()
                .WaitForStderr("checkpoint at clock 10 complete", absl::Seconds(20))
                .ok());
    absl::StatusOr<JobValues> values = ReadFinalValues(*cluster, w);
    INFO(values.status().message());
    REQUIRE(values.ok());
    straight = *std::move(values);
    const Comparison c = Compare(ExpectedAtClock(w, 10, {0, 1}), straight);
    INFO(c.ToString());
    REQUIRE(c.ok());
    CHECK(BitwiseEqual(ExpectedAtClock(w, 10, {0, 1}), straight));
    const std::vector<v1::CheckpointRecord> records = ListRecords(*cluster);
    REQUIRE(records.size() == 3);  // keep 3 of the records at 2, 4, .., 10
    CHECK(records[0].clock() == 6);
    CHECK(records[2].clock() == 10);
    first_record_at_10 = records[2].id();
    const absl::Status stopped = StopGracefully(*cluster);
    INFO(stopped.message());
    REQUIRE(stopped.ok());
  }

  // 2. Resume from the latest: clock 10, the same bits.
  {
    const absl::Time start = absl::Now();
    auto cluster = StartJob("roundtrip_latest", ckpt, "latest");
    const Observation seen = RunWorkers(*cluster, 10);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    CHECK(seen.clock == 10);
    const Comparison c = Compare(ExpectedAtClock(w, 10, {0, 1}), seen.values);
    INFO(c.ToString());
    CHECK(c.ok());
    CHECK(BitwiseEqual(straight, seen.values));
    const std::vector<v1::CheckpointRecord> records = ListRecords(*cluster);
    REQUIRE_FALSE(records.empty());
    const uint64_t bytes = RecordBytes(records.back());
    std::cout << absl::StrFormat(
                     "T9 resume latest: clock %d, %d bytes restored in %.3f s (%.1f MB/s, "
                     "process start to values read), mismatches %d",
                     seen.clock, bytes, seconds, bytes / seconds / 1e6, c.mismatched_keys)
              << std::endl;
    const absl::Status stopped = StopGracefully(*cluster);
    INFO(stopped.message());
    REQUIRE(stopped.ok());
  }

  // 3. Resume from clock 6, then run the branch on to 10.
  {
    auto cluster = StartJob("roundtrip_branch", ckpt, "6");
    CHECK(cluster->coordinator().ReadStderr().find("at clock 6 ") != std::string::npos);
    const Observation seen = RunWorkers(*cluster, 10);
    CHECK(seen.clock == 6);
    const Comparison at6 = Compare(ExpectedAtClock(w, 6, {0, 1}), seen.values);
    INFO(at6.ToString());
    CHECK(at6.ok());
    CHECK(BitwiseEqual(ExpectedAtClock(w, 6, {0, 1}), seen.values));

    REQUIRE(cluster->coordinator()
                .WaitForStderr("checkpoint at clock 10 complete", absl::Seconds(20))
                .ok());
    absl::StatusOr<JobValues> values = ReadFinalValues(*cluster, w);
    INFO(values.status().message());
    REQUIRE(values.ok());
    const Comparison at10 = Compare(ExpectedAtClock(w, 10, {0, 1}), *values);
    INFO(at10.ToString());
    CHECK(at10.ok());
    CHECK(BitwiseEqual(straight, *values));

    const std::vector<v1::CheckpointRecord> records = ListRecords(*cluster);
    REQUIRE(records.size() == 3);
    CHECK(records.back().clock() == 10);
    CHECK(records.back().id() > first_record_at_10);
    for (size_t i = 1; i < records.size(); ++i) CHECK(records[i].id() > records[i - 1].id());

    auto ctl = Subprocess::Spawn(kCtl, {"--coordinator", cluster->coordinator_address(),
                                        "checkpoints"},
                                 cluster->dir() + "/ctl");
    REQUIRE(ctl.ok());
    absl::StatusOr<ExitStatus> ended = (*ctl)->Wait(absl::Seconds(20));
    REQUIRE(ended.ok());
    INFO((*ctl)->ReadStdout() << (*ctl)->ReadStderr());
    CHECK(ended->ToString() == "exit code 0");
    std::vector<std::string> lines =
        absl::StrSplit((*ctl)->ReadStdout(), '\n', absl::SkipEmpty());
    REQUIRE(lines.size() == 1 + records.size());
    const std::vector<std::string> last = absl::StrSplit(lines.back(), ' ', absl::SkipEmpty());
    REQUIRE(last.size() >= 2);
    CHECK(last[0] == absl::StrCat(records.back().id()));
    CHECK(last[1] == "10");
    const absl::Status stopped = StopGracefully(*cluster);
    INFO(stopped.message());
    REQUIRE(stopped.ok());
  }
}

}  // namespace
}  // namespace cairn::reliability
