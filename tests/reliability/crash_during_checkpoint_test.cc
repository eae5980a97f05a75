// fault scenario T2, crash during checkpoint (ci tier): a BSP job of 2
// servers and 2 chaos workers checkpoints every 2 clocks (keep 3) while one
// process dies by kill -9, either at a random moment or at a named kill
// point of the checkpoint path, after which every process is killed -9.
// Each next start resumes from the newest complete checkpoint and must:
//   - start at all (the coordinator verifies every partition's checksum);
//   - resume from the record the coordinators last logged as complete
//     (never a partial checkpoint, never an older one);
//   - serve exactly the oracle's values at that clock (ExpectedAtClock);
// and no store may hold more than keep + 3 checkpoints (keep + 2 after a
// retention, one more between a write and its retention: see
// docs/checkpoint-format.md, "Atomicity and retention"). A run where fewer
// kills fired than were scheduled is INVALID (etcd's validity guard).
//
// Rounds: CAIRN_CRASH_ROUNDS (default 10); seed: CAIRN_CRASH_SEED (default
// fixed, printed). tools/checkpoint-crash runs 100 rounds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/coordinator_client.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;
using testing::TestCluster;

constexpr uint64_t kDefaultSeed = 20240611;
constexpr int kDefaultRounds = 10;
constexpr int kServers = 2;
constexpr int kEveryClocks = 2;
constexpr int kKeep = 3;
// What a store may hold at a kill: keep referenced checkpoints, 2 newer ones
// that may still complete, and the one just written whose report's
// retention had not run yet.
constexpr int kMaxStored = kKeep + 3;
// Clocks the workers run per round: 10 checkpoints when nothing dies.
constexpr int64_t kClocksPerRound = 20;
// Before kill -9 of everything, after the one kill: lets a report already on
// its way complete a checkpoint (or not).
constexpr absl::Duration kMaxSettle = absl::Milliseconds(50);
// How long a kill point may take to fire once the workers are done (the
// server writes and reports its last checkpoints in the background).
constexpr absl::Duration kKillPointGrace = absl::Seconds(3);

// The kill points of the checkpoint path (common/killpoint.h).
struct KillPointSite {
  const char* name;
  bool coordinator;  // reached by the coordinator, not by a server
  // at_<1..max_hit> is reached within one round: a server writes at least
  // 3 of a round's 10 snapshots (it drops those that come while 2 wait), and
  // at least 2 of them complete.
  int max_hit;
};
constexpr KillPointSite kSites[] = {
    {"checkpoint.before_write", false, 3},  {"checkpoint.before_batch", false, 3},
    {"checkpoint.before_flush", false, 3},  {"checkpoint.after_write", false, 3},
    {"checkpoint.after_report", false, 3},  {"checkpoint.before_retention", false, 2},
    {"registry.before_record", true, 2},
};

struct Fault {
  bool random = true;        // else a kill point
  int server = 0;            // the victim (random kills, server kill points)
  double at = 0;             // random kills: when, as a fraction of a round's run time
  const KillPointSite* site = nullptr;
  int hit = 1;

  std::string Victim() const {
    return !random && site->coordinator ? "coordinator" : absl::StrCat("server ", server);
  }
  std::string Spec() const { return absl::StrCat(site->name, ":at_", hit); }
  std::string ToString() const {
    if (random) return absl::StrFormat("random kill of server %d at %.2f of the run", server, at);
    return absl::StrCat("killpoint ", Spec(), " on ", Victim());
  }
};

// `retention_reachable`: the coordinator already holds `keep` records, so
// the next complete checkpoint drops one and every store deletes its part
// (checkpoint.before_retention is then hit at each complete checkpoint).
Fault DrawFault(std::mt19937_64& rng, bool retention_reachable) {
  Fault f;
  f.random = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
  f.server = std::uniform_int_distribution<int>(0, kServers - 1)(rng);
  f.at = std::uniform_real_distribution<double>(0, 1)(rng);
  do {
    f.site = &kSites[std::uniform_int_distribution<size_t>(0, std::size(kSites) - 1)(rng)];
  } while (!retention_reachable && std::string(f.site->name) == "checkpoint.before_retention");
  f.hit = std::uniform_int_distribution<int>(1, f.site->max_hit)(rng);
  return f;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// What one round did and found.
struct Round {
  Fault fault;
  bool fired = false;
  bool during_run = false;     // a chaos worker still ran when the victim died
  bool at_startup = false;     // the kill point fired before the cluster served
  int64_t restored_clock = 0;  // the clock the round started from
  uint64_t restored_record = 0;  // 0: a fresh start
  double restore_seconds = 0;  // coordinator start until the observer read the values
  std::vector<LoggedRecord> completed;  // logged by this round's coordinator
  std::vector<int> store_checkpoints;   // per server store, after the kills
  int64_t acked_clock = 0;     // every push of steps < this was acknowledged
};

// The clock below which every chaos worker's pushes were all acknowledged.
int64_t AckedClock(const std::string& history_dir, int64_t start) {
  absl::StatusOr<std::vector<HistoryRecord>> history = ReadHistoryDir(history_dir);
  if (!history.ok()) return start;
  int64_t acked = INT64_MAX;
  for (int w = 0; w < kChaosWorkers; ++w) {
    int64_t next = start;
    std::map<int64_t, int> ok_tables;
    for (const HistoryRecord& r : *history) {
      if (r.worker == w && r.outcome == Outcome::kOk) ++ok_tables[r.step];
    }
    while (ok_tables[next] == 2) ++next;  // both tables acknowledged
    acked = std::min(acked, next);
  }
  return acked;
}

// A coordinator asked to resume when nothing is complete must refuse to
// start (exit 2) and say why.
void CheckResumeRefused(const std::string& dir, const std::string& ckpt) {
  const std::string config = dir + "/refused.yaml";
  REQUIRE(testing::WriteFile(config, CheckpointJobYaml({ckpt, kEveryClocks, kKeep, "latest"}))
              .ok());
  auto coordinator = Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-coordinator",
                                       {"--config", config, "--listen", "127.0.0.1:0"},
                                       dir + "/refused-coordinator");
  REQUIRE(coordinator.ok());
  absl::StatusOr<ExitStatus> ended = (*coordinator)->Wait(absl::Seconds(20));
  REQUIRE(ended.ok());
  INFO((*coordinator)->ReadStderr());
  CHECK(ended->ToString() == "exit code 2");
  CHECK((*coordinator)->ReadStderr().find("no complete checkpoint") != std::string::npos);
}

class CrashRun {
 public:
  CrashRun(std::string dir, uint64_t seed)
      : dir_(std::move(dir)), ckpt_(dir_ + "/ckpt"), rng_(seed), expected_(CheckpointWorkload()) {}

  // Runs the workers of one round without faults on a job of its own, twice,
  // and takes the shorter run time (spawn to exit) as the window of random
  // kills.
  void Calibrate() {
    absl::Duration best = absl::InfiniteDuration();
    for (int i = 0; i < 2; ++i) best = std::min(best, TimeCleanRound(i));
    run_time_ = best;
  }

  absl::Duration TimeCleanRound(int index) {
    const std::string ckpt = absl::StrCat(dir_, "/calibration-ckpt-", index);
    auto cluster = TestCluster::Start(
        "crash_calibration", CheckpointJobYaml({ckpt, kEveryClocks, kKeep, "none"}), kServers);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    const std::string history_dir = (*cluster)->dir() + "/history";
    std::filesystem::create_directories(history_dir);
    const absl::Time start = absl::Now();
    auto workers = SpawnChaosWorkers(**cluster, kClocksPerRound, history_dir);
    REQUIRE(workers.ok());
    REQUIRE(ObserveAndLeave(**cluster, CheckpointWorkload()).ok());
    for (auto& w : *workers) {
      absl::StatusOr<ExitStatus> ended = w->Wait(absl::Seconds(60));
      INFO(w->ReadStderr() << (*cluster)->Logs());
      REQUIRE(ended.ok());
      REQUIRE(ended->ToString() == "exit code 0");
    }
    return absl::Now() - start;
  }
  absl::Duration run_time() const { return run_time_; }

  // Starts the job (resuming from the newest complete checkpoint once there
  // is one) and checks what it starts from. With `fault`, runs the workers
  // for a round and kills as scheduled; without, only checks (the end).
  Round RunRound(int index, const std::optional<Fault>& fault) {
    Round round;
    if (fault) round.fault = *fault;
    const bool resume = last_logged_.has_value();
    if (!resume && index > 0) CheckResumeRefused(RoundDir(index), ckpt_);

    TestCluster::Env env;
    if (fault && !fault->random) {
      const std::vector<std::string> kill = {"CAIRN_KILLPOINT=" + fault->Spec()};
      if (fault->site->coordinator) {
        env.coordinator = kill;
      } else {
        env.servers.resize(kServers);
        env.servers[fault->server] = kill;
      }
    }
    const absl::Time start = absl::Now();
    auto cluster = TestCluster::Start(
        absl::StrCat("crash_round_", index),
        CheckpointJobYaml({ckpt_, kEveryClocks, kKeep, resume ? "latest" : "none"}), kServers,
        env);
    if (!cluster.ok() && fault && !fault->random &&
        absl::StrContains(cluster.status().message(), FiredLine(*fault))) {
      // The kill point fired while the victim started: a restart prunes the
      // checkpoints earlier runs left incomplete before it serves, and a
      // coordinator may write a record as it starts. A crash there is one
      // more crash the next round resumes from; nothing was acknowledged.
      round.fired = true;
      round.at_startup = true;
      if (resume) {
        round.restored_clock = last_logged_->clock;
        round.restored_record = last_logged_->record;
      }
      round.acked_clock = round.restored_clock;
      CheckStores(&round, "");
      return round;
    }
    INFO("round " << index << ": " << cluster.status().message());
    REQUIRE(cluster.ok());
    TestCluster& c = **cluster;
    INFO("logs and histories in " << c.dir() << ", checkpoints in " << ckpt_);

    // Resumed from the record the previous coordinators logged last.
    const std::optional<LoggedRecord> resumed = ResumedFrom(c.coordinator().ReadStderr());
    if (resume) {
      REQUIRE(resumed.has_value());
      CHECK(resumed->record == last_logged_->record);
      CHECK(resumed->clock == last_logged_->clock);
      round.restored_clock = resumed->clock;
      round.restored_record = resumed->record;
    } else {
      CHECK_FALSE(resumed.has_value());
    }

    const std::string history_dir = c.dir() + "/history";
    std::filesystem::create_directories(history_dir);
    const int64_t target = round.restored_clock + (fault ? kClocksPerRound : 0);
    auto workers = SpawnChaosWorkers(c, target, history_dir);
    REQUIRE(workers.ok());
    const absl::Time workers_started = absl::Now();
    // A server that cannot load the checkpoint exits, and the observer
    // cannot reach it: the logs below say why.
    absl::StatusOr<Observation> seen = ObserveAndLeave(c, CheckpointWorkload());
    if (!seen.ok()) FAIL("observer: " << seen.status().message() << "\n" << c.Logs());
    round.restore_seconds = absl::ToDoubleSeconds(absl::Now() - start);
    CHECK(seen->clock == round.restored_clock);
    const Comparison restored = Compare(expected_.At(round.restored_clock), seen->values);
    INFO("values at clock " << round.restored_clock << ": " << restored.ToString());
    CHECK(restored.ok());
    CHECK(restored.compared_keys == CheckpointWorkload().dense_size + 100);

    if (!fault) {  // the final check: the workers start at the clock and end
      for (auto& w : *workers) {
        absl::StatusOr<ExitStatus> ended = w->Wait(absl::Seconds(30));
        INFO(w->ReadStderr());
        REQUIRE(ended.ok());
        CHECK(ended->ToString() == "exit code 0");
      }
      return round;
    }

    Subprocess& victim =
        !fault->random && fault->site->coordinator ? c.coordinator() : c.server(fault->server);
    auto any_worker_running = [&] {
      bool running = false;
      for (auto& w : *workers) running = w->Running() || running;
      return running;
    };
    if (fault->random) {
      const absl::Time kill_at = workers_started + fault->at * run_time_;
      std::optional<absl::Time> workers_done;
      while (absl::Now() < kill_at) {
        if (!workers_done && !any_worker_running()) workers_done = absl::Now();
        absl::SleepFor(absl::Milliseconds(1));
      }
      // An unharmed round ended sooner than the window: the machine got
      // faster (or the calibration was slow); later kills aim at this.
      if (workers_done) run_time_ = *workers_done - workers_started;
      round.during_run = any_worker_running();
      round.fired = victim.Running();
      victim.Kill();
    } else {
      std::optional<absl::Time> give_up;
      while (victim.Running()) {
        if (!any_worker_running()) {
          if (!give_up) give_up = absl::Now() + kKillPointGrace;
          if (absl::Now() > *give_up) break;
        }
        absl::SleepFor(absl::Milliseconds(2));
      }
      round.during_run = any_worker_running();
      round.fired = !victim.Running() &&
                    victim.ReadStderr().find(FiredLine(*fault)) != std::string::npos;
      victim.Kill();
    }
    absl::SleepFor(absl::Microseconds(std::uniform_int_distribution<int64_t>(
        0, absl::ToInt64Microseconds(kMaxSettle))(rng_)));
    // kill -9 everything; the coordinator last and a moment later, so a
    // report that already reached it is logged once its record is written
    // (the log is this test's witness of "complete"; the coordinator's own
    // death inside a record is the registry.before_record kill point).
    for (int i = 0; i < c.num_servers(); ++i) c.server(i).Kill();
    for (auto& w : *workers) w->Kill();
    absl::SleepFor(absl::Milliseconds(20));
    c.coordinator().Kill();

    round.completed = CompletedCheckpoints(c.coordinator().ReadStderr());
    if (!round.completed.empty()) last_logged_ = round.completed.back();
    std::string records;
    for (const LoggedRecord& l : round.completed) {
      absl::StrAppend(&records, " ", l.record, "@", l.clock);
    }
    CheckStores(&round, records);
    round.acked_clock = AckedClock(history_dir, round.restored_clock);
    return round;
  }

  // Counts each store's checkpoints into `round` and checks the retention
  // bound. `records`: those logged this round, as " record@clock ...".
  void CheckStores(Round* round, const std::string& records) {
    for (uint32_t s = 0; s < kServers; ++s) {
      absl::StatusOr<std::vector<StoredCheckpoint>> stored = StoreCheckpoints(ckpt_, s);
      INFO("store of server " << s << ": " << stored.status().message());
      REQUIRE(stored.ok());
      round->store_checkpoints.push_back(static_cast<int>(stored->size()));
      // Checkpoints as id@clock; records logged this round as record@clock.
      INFO("store of server " << s << " holds " << ToString(*stored) << "; records logged:"
                              << records);
      // A run that died after writing checkpoints that never completed
      // leaves them until the victim's next start deletes them (the "T2
      // retention" case below shows that deterministically); a kill between
      // a write and its retention leaves one more than a retention does.
      CHECK(stored->size() <= static_cast<size_t>(kMaxStored));
    }
  }

  // What the victim logs when the scheduled kill point fires.
  static std::string FiredLine(const Fault& fault) {
    return absl::StrCat("killpoint ", fault.site->name, " fired (hit ", fault.hit, ")");
  }

  Fault NextFault() {
    return DrawFault(rng_, last_logged_.has_value() && last_logged_->record >= kKeep);
  }

 private:
  std::string RoundDir(int index) {
    const std::string d = absl::StrCat(dir_, "/round-", index);
    std::filesystem::create_directories(d);
    return d;
  }

  const std::string dir_;
  const std::string ckpt_;
  std::mt19937_64 rng_;
  ExpectedStates expected_;
  std::optional<LoggedRecord> last_logged_;  // the newest record any coordinator logged
  absl::Duration run_time_ = absl::Milliseconds(300);  // of a round's workers, unharmed
};

std::string RoundLine(int index, const Round& r) {
  std::vector<std::string> done;
  for (const LoggedRecord& l : r.completed) done.push_back(absl::StrCat(l.clock));
  return absl::StrFormat(
      "round %d: %s -> %s%s; restored clock %d (record %d) in %.3f s; completed clocks [%s]; "
      "acked to clock %d; store checkpoints [%s]",
      index, r.fault.ToString(), r.fired ? "fired" : "NOT FIRED",
      r.at_startup ? " at start-up" : (r.during_run ? "" : " (workers already done)"),
      r.restored_clock, r.restored_record,
      r.restore_seconds, absl::StrJoin(done, ","), r.acked_clock,
      absl::StrJoin(r.store_checkpoints, ","));
}

TEST_CASE("T2: after kill -9 during checkpoints every restart resumes from the last complete "
          "checkpoint with the oracle's values",
          "[reliability][checkpoint][crash]") {
  const int rounds = static_cast<int>(EnvInt("CAIRN_CRASH_ROUNDS", kDefaultRounds));
  const uint64_t seed = static_cast<uint64_t>(EnvInt("CAIRN_CRASH_SEED", kDefaultSeed));
  REQUIRE(rounds >= 1);
  absl::StatusOr<std::string> dir = testing::MakeTempDir("checkpoint_crash");
  REQUIRE(dir.ok());
  std::cout << "checkpoint crash: " << rounds << " rounds, seed " << seed
            << " (CAIRN_CRASH_SEED), dir " << *dir << std::endl;

  CrashRun run(*dir, seed);
  run.Calibrate();
  std::cout << "random kills within " << absl::FormatDuration(run.run_time())
            << " after the workers start (" << kClocksPerRound
            << " clocks without faults took that long; later unharmed rounds update it)"
            << std::endl;
  std::vector<Round> done;
  for (int i = 0; i < rounds; ++i) {
    const Fault fault = run.NextFault();
    done.push_back(run.RunRound(i, fault));
    std::cout << RoundLine(i, done.back()) << std::endl;
  }
  const Round last = run.RunRound(rounds, std::nullopt);
  std::cout << absl::StrFormat("final check: restored clock %d (record %d) in %.3f s",
                               last.restored_clock, last.restored_record, last.restore_seconds)
            << std::endl;

  int random_scheduled = 0, random_fired = 0, random_during = 0;
  int point_scheduled = 0, point_fired = 0;
  std::map<std::string, std::pair<int, int>> by_site;  // name -> (scheduled, fired)
  std::vector<double> restores;
  int max_store = 0;
  int64_t rolled_back = 0;
  for (size_t i = 0; i < done.size(); ++i) {
    const Round& r = done[i];
    if (r.fault.random) {
      ++random_scheduled;
      random_fired += r.fired;
      random_during += r.fired && r.during_run;
    } else {
      ++point_scheduled;
      point_fired += r.fired;
      auto& [s, f] = by_site[r.fault.site->name];
      ++s;
      f += r.fired;
    }
    if (r.restored_record != 0 && !r.at_startup) restores.push_back(r.restore_seconds);
    for (int n : r.store_checkpoints) max_store = std::max(max_store, n);
    const int64_t next_clock = i + 1 < done.size() ? done[i + 1].restored_clock
                                                   : last.restored_clock;
    rolled_back += std::max<int64_t>(0, r.acked_clock - next_clock);
  }
  if (last.restored_record != 0) restores.push_back(last.restore_seconds);
  std::vector<std::string> sites;
  for (const auto& [name, sf] : by_site) {
    sites.push_back(absl::StrCat(name, " ", sf.second, "/", sf.first));
  }
  std::cout << absl::StrFormat(
                   "summary: %d rounds, seed %d; kills fired %d/%d (random %d/%d, %d during the "
                   "run; killpoints %d/%d: %s); restores %d, restore time p50 %.3f s max %.3f s; "
                   "max checkpoints per store %d (bound %d); acknowledged clocks rolled back %d",
                   rounds, seed, random_fired + point_fired, random_scheduled + point_scheduled,
                   random_fired, random_scheduled, random_during, point_fired, point_scheduled,
                   absl::StrJoin(sites, ", "), restores.size(), Percentile(restores, 0.5),
                   Percentile(restores, 1.0), max_store, kMaxStored, rolled_back)
            << std::endl;
  INFO("INVALID run: fewer kills fired than scheduled");
  CHECK(random_fired + point_fired == random_scheduled + point_scheduled);
}

// Retention after crashes, deterministically: a checkpoint written by one
// server in a run that dies before the checkpoint completes is never
// referenced by any record. Three resumed runs in a row in which server 0
// dies before writing (checkpoint.before_write:at_1) while server 1 writes
// its part at clock C + 2: each run's server 1 deletes the earlier runs'
// orphans when it starts, so the store never holds more than keep + 2.
TEST_CASE("T2 retention: checkpoints of runs that died before completing one stay within "
          "keep + 2 per store",
          "[reliability][checkpoint][crash]") {
  constexpr int kDeadRuns = 3;
  absl::StatusOr<std::string> dir = testing::MakeTempDir("checkpoint_orphans");
  REQUIRE(dir.ok());
  const std::string ckpt = *dir + "/ckpt";
  const Workload w = CheckpointWorkload();
  auto store_size = [&](uint32_t server) {
    absl::StatusOr<std::vector<StoredCheckpoint>> stored = StoreCheckpoints(ckpt, server);
    INFO(stored.status().message());
    REQUIRE(stored.ok());
    return stored->size();
  };
  LoggedRecord last;  // the newest record of the first run
  {
    // Snapshots at clocks 2, 4, .., 12; the registry keeps the newest 3 records.
    auto cluster = TestCluster::Start("orphans_first",
                                      CheckpointJobYaml({ckpt, kEveryClocks, kKeep, "none"}),
                                      kServers);
    REQUIRE(cluster.ok());
    std::filesystem::create_directories((*cluster)->dir() + "/history");
    auto workers = SpawnChaosWorkers(**cluster, 13, (*cluster)->dir() + "/history");
    REQUIRE(workers.ok());
    REQUIRE(ObserveAndLeave(**cluster, w).ok());
    for (auto& worker : *workers) {
      absl::StatusOr<ExitStatus> ended = worker->Wait(absl::Seconds(30));
      REQUIRE(ended.ok());
      REQUIRE(ended->ToString() == "exit code 0");
    }
    absl::SleepFor(absl::Milliseconds(500));  // the servers write and report the last ones
    CoordinatorClient coordinator((*cluster)->coordinator_address(), 64 << 20);
    absl::StatusOr<v1::ListCheckpointsResponse> list =
        coordinator.ListCheckpoints(absl::Seconds(5));
    REQUIRE(list.ok());
    REQUIRE(list->records_size() == kKeep);
    last = {list->records(kKeep - 1).clock(), list->records(kKeep - 1).id()};
  }  // every process dies by SIGKILL
  CHECK(store_size(1) <= static_cast<size_t>(kKeep + 2));
  for (int run = 0; run < kDeadRuns; ++run) {
    TestCluster::Env env;
    env.servers = {{"CAIRN_KILLPOINT=checkpoint.before_write:at_1"}, {}};
    auto cluster = TestCluster::Start(absl::StrCat("orphans_dead_", run),
                                      CheckpointJobYaml({ckpt, kEveryClocks, kKeep, "latest"}),
                                      kServers, env);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    TestCluster& c = **cluster;
    INFO("logs in " << c.dir());
    const std::optional<LoggedRecord> resumed = ResumedFrom(c.coordinator().ReadStderr());
    REQUIRE(resumed.has_value());
    // Every dead run resumes from the first run's newest record.
    CHECK(resumed->record == last.record);
    CHECK(resumed->clock == last.clock);
    std::filesystem::create_directories(c.dir() + "/history");
    auto workers = SpawnChaosWorkers(c, last.clock + 3, c.dir() + "/history");
    REQUIRE(workers.ok());
    absl::StatusOr<Observation> seen = ObserveAndLeave(c, w);
    REQUIRE(seen.ok());
    CHECK(Compare(ExpectedAtClock(w, last.clock, {0, 1}), seen->values).ok());
    const absl::Status died =
        c.server(0).WaitForStderr("killpoint checkpoint.before_write fired", absl::Seconds(30));
    INFO(died.message());
    REQUIRE(died.ok());
    const absl::Status wrote = c.server(1).WaitForStderr(
        absl::StrCat("at clock ", last.clock + 2, " written"), absl::Seconds(30));
    INFO(wrote.message());
    REQUIRE(wrote.ok());
    for (int i = 0; i < kServers; ++i) c.server(i).Kill();
    c.coordinator().Kill();
    CHECK(CompletedCheckpoints(c.coordinator().ReadStderr()).empty());
    // This run's checkpoint past the newest record's clock, never completed;
    // the earlier dead runs' ones went when this run's server 1 started
    // (a starting server deletes what no complete checkpoint refers to).
    absl::StatusOr<std::vector<StoredCheckpoint>> stored = StoreCheckpoints(ckpt, 1);
    REQUIRE(stored.ok());
    INFO("server 1's store: " << ToString(*stored));
    CHECK(std::count_if(stored->begin(), stored->end(), [&](const StoredCheckpoint& s) {
            return s.clock > last.clock;
          }) == 1);
  }
  INFO("server 1's store after " << kDeadRuns << " runs that completed nothing: "
                                 << ToString(*StoreCheckpoints(ckpt, 1)));
  CHECK(store_size(1) <= static_cast<size_t>(kKeep + 2));
}

}  // namespace
}  // namespace cairn::reliability
