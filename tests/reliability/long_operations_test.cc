// A server busy with a long snapshot or a long load stays alive (issue:
// faults the suite never reached, finding 3). Copying a large shard for a
// checkpoint, or loading one at a resume, holds the shard for as long as its
// bytes need; the lease must be renewed meanwhile, or the coordinator
// declares the server dead and it drops everything it holds.
//
// A stall kill point (common/killpoint.h, `:stall_<MS>`) makes the copy or
// the load last three and a half leases on a small job, so the test runs in seconds:
// the same code path as a multi-gigabyte shard, without the gigabytes.
// Before the lease was renewed without the shard lock, both cases ended with
// the server declared dead.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"
#include "tools/ctl/cluster_status.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;
using testing::TestCluster;

constexpr absl::Duration kLease = absl::Seconds(2);
constexpr int kStallMs = 7000;  // three and a half leases
constexpr int kServers = 2;

// The checkpoint job (2 servers, BSP, a checkpoint every 2 clocks) with a
// 2 s lease; `server_env` for every server.
std::unique_ptr<TestCluster> StartJob(const std::string& name, const std::string& ckpt,
                                      const std::string& resume, const std::string& server_env) {
  const std::string yaml = absl::StrReplaceAll(CheckpointJobYaml({ckpt, 2, 3, resume}),
                                               {{"lease_timeout: 5s", "lease_timeout: 2s"}});
  TestCluster::Env env;
  env.servers = {{server_env}, {server_env}};
  auto cluster = TestCluster::Start(name, yaml, kServers, env);
  INFO(name << ": " << cluster.status().message());
  REQUIRE(cluster.ok());
  return *std::move(cluster);
}

double Metric(int port, const std::string& series) {
  absl::StatusOr<std::string> text = testing::HttpGet(port, "/metrics");
  if (!text.ok()) return -1;
  absl::StatusOr<double> v = testing::MetricValue(*text, series);
  return v.ok() ? *v : -1;
}

// Runs the chaos workers to `steps` with the observer; while they run,
// records whether any server showed cairn_shard_busy{operation} = 1 and
// whether `cairnctl status` (FetchClusterStatus) showed it busy.
Observation RunWorkers(TestCluster& cluster, int64_t steps, const std::string& operation,
                       bool* seen_busy, bool* stats_busy) {
  const std::string history = cluster.dir() + "/history";
  std::filesystem::create_directories(history);
  auto workers = SpawnChaosWorkers(cluster, steps, history);
  REQUIRE(workers.ok());
  const std::string busy = absl::StrCat("cairn_shard_busy{operation=\"", operation, "\"}");
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    while (!stop.load()) {
      for (int i = 0; i < cluster.num_servers(); ++i) {
        if (Metric(cluster.server_metrics_port(i), busy) == 1) *seen_busy = true;
      }
      absl::StatusOr<ctl::ClusterStatus> status =
          ctl::FetchClusterStatus(cluster.coordinator_address(), absl::Milliseconds(500));
      if (status.ok()) {
        for (const ctl::ServerStats& s : status->servers) {
          if (s.status.ok() && s.stats.busy() == operation) *stats_busy = true;
        }
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  absl::StatusOr<Observation> seen = ObserveAndLeave(cluster, CheckpointWorkload());
  for (auto& w : *workers) {
    absl::StatusOr<ExitStatus> ended = w->Wait(absl::Seconds(60));
    if (!ended.ok() || ended->ToString() != "exit code 0") {
      stop.store(true);
      watcher.join();
      FAIL("chaos worker: " << (ended.ok() ? ended->ToString() : "still running") << "\n"
                            << w->ReadStderr() << cluster.Logs());
    }
  }
  stop.store(true);
  watcher.join();
  if (!seen.ok()) FAIL("observer: " << seen.status().message() << "\n" << cluster.Logs());
  return *std::move(seen);
}

void CheckNoServerDeclaredDead(TestCluster& cluster) {
  INFO(cluster.Logs());
  CHECK(Metric(cluster.coordinator_metrics_port(),
               "cairn_coordinator_lease_expirations_total{role=\"server\"}") == 0);
  for (int i = 0; i < cluster.num_servers(); ++i) {
    CHECK(cluster.server(i).Running());
    CHECK(Metric(cluster.server_metrics_port(i), "cairn_shard_rejoins_total") == 0);
  }
}


TEST_CASE("a checkpoint snapshot and a resume load that last over three leases keep the servers "
          "alive and the job exact",
          "[reliability][checkpoint][lease]") {
  const Workload w = CheckpointWorkload();
  absl::StatusOr<std::string> dir = testing::MakeTempDir("long_operations");
  REQUIRE(dir.ok());
  const std::string ckpt = *dir + "/ckpt";

  // 1. The second snapshot of each server (at clock 4) takes 3.5 leases.
  {
    auto cluster = StartJob("long_snapshot", ckpt, "none",
                            absl::StrCat("CAIRN_KILLPOINT=shard.snapshot:at_2:stall_", kStallMs));
    bool busy = false, stats_busy = false;
    const absl::Time start = absl::Now();
    const Observation seen = RunWorkers(*cluster, 10, "snapshot", &busy, &stats_busy);
    const absl::Duration took = absl::Now() - start;
    CHECK(seen.clock == 0);
    REQUIRE(cluster->coordinator()
                .WaitForStderr("checkpoint at clock 10 complete", absl::Seconds(20))
                .ok());
    for (int i = 0; i < kServers; ++i) {
      CHECK(cluster->server(i).ReadStderr().find(
                absl::StrCat("killpoint shard.snapshot stalls ", kStallMs, " ms (hit 2)")) !=
            std::string::npos);
    }
    CheckNoServerDeclaredDead(*cluster);
    CHECK(busy);        // cairn_shard_busy{operation="snapshot"} showed it
    CHECK(stats_busy);  // and so did cairnctl status
    CHECK(cluster->coordinator().ReadStderr().find("checkpoint at clock 4 complete") !=
          std::string::npos);
    absl::StatusOr<JobValues> values = ReadFinalValues(*cluster, w);
    INFO(values.status().message());
    REQUIRE(values.ok());
    CHECK(BitwiseEqual(ExpectedAtClock(w, 10, {0, 1}), *values));
    std::cout << "snapshot stalled " << kStallMs << " ms (lease " << absl::FormatDuration(kLease)
              << "): servers declared dead 0; 10 BSP clocks took " << absl::FormatDuration(took)
              << std::endl;
    const absl::Status stopped = StopGracefully(*cluster);
    INFO(stopped.message());
    REQUIRE(stopped.ok());
  }

  // 2. Resuming: each server's load of the clock-10 checkpoint takes 3.5
  // leases; the job goes on from clock 10, exact.
  {
    auto cluster = StartJob("long_load", ckpt, "latest",
                            absl::StrCat("CAIRN_KILLPOINT=shard.load:at_1:stall_", kStallMs));
    bool busy = false, stats_busy = false;
    const Observation seen = RunWorkers(*cluster, 14, "load", &busy, &stats_busy);
    CHECK(seen.clock == 10);
    const Comparison at_start = Compare(ExpectedAtClock(w, 10, {0, 1}), seen.values);
    INFO(at_start.ToString());
    CHECK(at_start.ok());
    for (int i = 0; i < kServers; ++i) {
      CHECK(cluster->server(i).ReadStderr().find(
                absl::StrCat("killpoint shard.load stalls ", kStallMs, " ms (hit 1)")) !=
            std::string::npos);
    }
    CheckNoServerDeclaredDead(*cluster);
    CHECK(busy);
    CHECK(stats_busy);
    absl::StatusOr<JobValues> values = ReadFinalValues(*cluster, w);
    INFO(values.status().message());
    REQUIRE(values.ok());
    CHECK(BitwiseEqual(ExpectedAtClock(w, 14, {0, 1}), *values));
  }
}

}  // namespace
}  // namespace cairn::reliability
