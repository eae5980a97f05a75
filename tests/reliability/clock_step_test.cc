// Field case B14: leases must not follow the wall clock. The coordinator
// runs under libfaketime (Debian's `faketime`), whose offset the test steps
// while the job runs: +1 h (an NTP correction, a VM resumed), then 10 min
// back. The monotonic clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC), as
// a real step leaves it. Nobody may be declared dead by a step, and a worker
// that really stops must still be declared dead within its lease, once.
//
// Before leases were timed on the monotonic clock, the +1 h step declared
// every server and worker dead in the same instant (the server dropped its
// state), and the expiry loop, sleeping until a wall-clock deadline, stopped
// noticing deaths for as long as the step.
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::Subprocess;

constexpr absl::Duration kLease = absl::Seconds(2);

// libfaketime's multi-threaded variant, where Debian installs it.
std::string LibFaketime() {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/faketime/libfaketimeMT.so.1"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// Sets the coordinator's wall-clock offset (read on every time call).
void SetOffset(const std::string& rc, const std::string& offset) {
  const std::string tmp = rc + ".tmp";
  {
    std::ofstream out(tmp);
    out << offset << "\n";
  }
  std::filesystem::rename(tmp, rc);  // atomic: the reader never sees a torn file
}

std::string JobYaml() {
  return absl::StrCat(R"(
cluster:
  servers: 1
  workers: 2
  partitions: 8
  lease_timeout: 2s
  heartbeat_interval: 250ms
  startup_timeout: 30s
  on_worker_loss: continue
rpc:
  deadline: 10s
consistency:
  mode: asp
tables:
)", WorkloadTablesYaml());
}

double Expirations(const testing::TestCluster& c, const std::string& role) {
  absl::StatusOr<std::string> text = testing::HttpGet(c.coordinator_metrics_port(), "/metrics");
  if (!text.ok()) return -1;
  absl::StatusOr<double> v = testing::MetricValue(
      *text, absl::StrCat("cairn_coordinator_lease_expirations_total{role=\"", role, "\"}"));
  return v.ok() ? *v : -1;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The wall time a coordinator log line containing `part` was written at, as
// the coordinator saw it ("YYYY-MM-DD HH:MM:SS.mmm ..." lines, UTC).
absl::StatusOr<absl::Time> LoggedAt(const std::string& log, const std::string& part) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (line.find(part) == absl::string_view::npos || line.size() < 23) continue;
    absl::Time t;
    std::string error;
    if (absl::ParseTime("%Y-%m-%d %H:%M:%E3S", std::string(line.substr(0, 23)),
                        absl::LocalTimeZone(), &t, &error)) {
      return t;
    }
    return absl::InvalidArgumentError(absl::StrCat("cannot read the time of: ", line));
  }
  return absl::NotFoundError(absl::StrCat("no line with \"", part, "\""));
}

TEST_CASE("B14: stepping the coordinator's wall clock +1 h and -10 min expires nobody, and a "
          "stopped worker is still declared dead within its lease, once",
          "[reliability][integration][clock]") {
  const std::string lib = LibFaketime();
  INFO("libfaketime is not installed (tools/setup installs Debian's faketime)");
  REQUIRE(!lib.empty());
  absl::StatusOr<std::string> dir = testing::MakeTempDir("clock_step");
  REQUIRE(dir.ok());
  const std::string rc = *dir + "/faketime.rc";
  SetOffset(rc, "+0");
  testing::TestCluster::Env env;
  env.coordinator = {absl::StrCat("LD_PRELOAD=", lib), absl::StrCat("FAKETIME_TIMESTAMP_FILE=", rc),
                     "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1",
                     "FAKETIME_DONT_RESET=1"};
  auto cluster = testing::TestCluster::Start("clock_step", JobYaml(), 1, env);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  testing::TestCluster& c = **cluster;
  const std::string history_dir = c.dir() + "/history";
  std::filesystem::create_directories(history_dir);
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int id : {0, 1}) {
    auto w = SpawnChaosWorker(c, id, 1'000'000'000, history_dir, {"--seconds", "40"});
    REQUIRE(w.ok());
    workers.push_back(*std::move(w));
  }
  // Both train.
  const std::string first = absl::StrCat(history_dir, "/worker-1.jsonl");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (testing::ReadFileOrEmpty(first).size() < 2000 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  INFO(c.Logs());
  REQUIRE(testing::ReadFileOrEmpty(first).size() >= 2000);
  REQUIRE(Expirations(c, "worker") == 0);

  // +1 h: three leases later, nobody is dead.
  SetOffset(rc, "+3600");
  absl::SleepFor(3 * kLease);
  CHECK(Expirations(c, "worker") == 0);
  CHECK(Expirations(c, "server") == 0);
  // 10 min back from there.
  SetOffset(rc, "+3000");
  absl::SleepFor(3 * kLease);
  CHECK(Expirations(c, "worker") == 0);
  CHECK(Expirations(c, "server") == 0);
  CHECK(c.server(0).Running());
  for (auto& w : workers) CHECK(w->Running());
  CHECK(Count(c.coordinator().ReadStderr(), "lease expired: DEAD") == 0);

  // A worker that stops for real is declared dead within its lease (plus
  // the expiry loop's half heartbeat), by the monotonic clock.
  REQUIRE(workers[1]->Signal(SIGSTOP).ok());
  const absl::Time stopped = absl::Now();
  REQUIRE(c.coordinator().WaitForStderr("worker 1 lost at clock", absl::Seconds(10)).ok());
  const absl::Duration to_dead = absl::Now() - stopped;
  absl::SleepFor(2 * kLease);  // no flapping, no second declaration
  const std::string log = c.coordinator().ReadStderr();
  std::cout << "B14: coordinator wall clock stepped +1 h then -10 min: lease expirations "
            << Expirations(c, "worker") << " (workers), " << Expirations(c, "server")
            << " (servers); a stopped worker declared dead " << absl::FormatDuration(to_dead)
            << " after SIGSTOP (lease " << absl::FormatDuration(kLease) << ")" << std::endl;
  CHECK(to_dead < kLease + absl::Seconds(1));
  CHECK(Expirations(c, "worker") == 1);
  CHECK(Expirations(c, "server") == 0);
  CHECK(Count(log, "lease expired: DEAD") == 1);
  // The step did reach the coordinator: it logged the death 50 minutes
  // ahead of the real clock.
  absl::StatusOr<absl::Time> logged = LoggedAt(log, "worker 1 lost at clock");
  INFO(logged.status().message());
  REQUIRE(logged.ok());
  const absl::Duration ahead = *logged - absl::Now();
  INFO("the coordinator's log is " << absl::FormatDuration(ahead) << " ahead");
  CHECK(ahead > absl::Minutes(49));
  CHECK(ahead < absl::Minutes(51));

  REQUIRE(workers[1]->Signal(SIGCONT).ok());
  CHECK(workers[0]->Running());
  CHECK(c.server(0).Running());
}

}  // namespace
}  // namespace cairn::reliability
