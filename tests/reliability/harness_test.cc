// Tests of the reliability harness itself: kill points fire as configured,
// histories round-trip, the oracle attributes lost/duplicate/unexpected
// pushes exactly, and a clean BSP job run by two chaos workers matches the
// oracle bit for bit.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/killpoint.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/reliability/workload.h"
#include "tests/testing/process.h"
#include "worker/client/client.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;

const char kProbe[] = CAIRN_BINARY_DIR "/tests/reliability/killpoint_probe";
const char kChaosWorker[] = CAIRN_BINARY_DIR "/tests/reliability/cairn-chaos-worker";

std::string TempDir(const std::string& prefix) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir(prefix);
  REQUIRE(dir.ok());
  return *dir;
}

// Runs the probe with exactly the given kill-point variables (the test's own
// are removed), through env(1) so this process's environment is untouched.
struct ProbeRun {
  ExitStatus status;
  std::string stderr_text;
};
ProbeRun RunProbe(const std::string& dir, const std::string& name,
                  const std::vector<std::string>& variables) {
  std::vector<std::string> args = {"-u", "CAIRN_KILLPOINT", "-u", "CAIRN_KILLPOINT_SEED"};
  args.insert(args.end(), variables.begin(), variables.end());
  args.push_back(kProbe);
  auto probe = Subprocess::Spawn("/usr/bin/env", args, dir + "/" + name);
  REQUIRE(probe.ok());
  absl::StatusOr<ExitStatus> ended = (*probe)->Wait(absl::Seconds(10));
  REQUIRE(ended.ok());
  return ProbeRun{*ended, (*probe)->ReadStderr()};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("kill point specs parse, and malformed ones are rejected naming the rule",
          "[reliability][killpoint]") {
  auto rules = ParseKillPointSpec("checkpoint.before_write:at_3,push.ack-1:1_in_500");
  REQUIRE(rules.ok());
  REQUIRE(rules->size() == 2);
  CHECK((*rules)[0].name == "checkpoint.before_write");
  CHECK((*rules)[0].kind == KillPointRule::Kind::kAt);
  CHECK((*rules)[0].n == 3);
  CHECK((*rules)[1].name == "push.ack-1");
  CHECK((*rules)[1].kind == KillPointRule::Kind::kOneIn);
  CHECK((*rules)[1].n == 500);
  CHECK((*rules)[1].stall_ms == 0);
  CHECK(ParseKillPointSpec("")->empty());
  auto stall = ParseKillPointSpec("shard.snapshot:at_2:stall_1500");
  REQUIRE(stall.ok());
  CHECK((*stall)[0].name == "shard.snapshot");
  CHECK((*stall)[0].n == 2);
  CHECK((*stall)[0].stall_ms == 1500);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"probe", "has no ':'"},
      {"probe:sometimes", "neither 1_in_<N> nor at_<K>"},
      {"probe:at_0", "\"0\" is not an integer >= 1"},
      {"probe:1_in_x", "\"x\" is not an integer >= 1"},
      {":at_1", "must be non-empty"},
      {"pro be:at_1", "must be non-empty letters"},
      {"probe:at_1,probe:at_2", "appears more than once"},
      {"probe:at_1,", "has no ':'"},
      {"probe:at_1:sleep_5", "\"sleep_5\" is not stall_<MS>"},
      {"probe:at_1:stall_0", "is not stall_<MS> with MS an integer >= 1"},
  };
  for (const auto& [spec, why] : bad) {
    INFO(spec);
    auto parsed = ParseKillPointSpec(spec);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Contains(std::string(parsed.status().message()), why));
  }
}

TEST_CASE("a kill point fires by SIGKILL at the configured hit", "[reliability][killpoint]") {
  const std::string dir = TempDir("killpoint");
#ifndef CAIRN_KILLPOINTS
  // Compiled out: the macro is empty and the probe always finishes.
  const ProbeRun run = RunProbe(dir, "off", {"CAIRN_KILLPOINT=probe:at_1"});
  CHECK(run.status.exited());
  CHECK(run.status.code == 0);
#else
  SECTION("at_3 fires on the third hit") {
    const ProbeRun run = RunProbe(dir, "at3", {"CAIRN_KILLPOINT=probe:at_3"});
    INFO(run.stderr_text);
    CHECK(run.status.signal == SIGKILL);
    CHECK(Contains(run.stderr_text, "killpoint probe fired (hit 3)\n"));
    CHECK_FALSE(Contains(run.stderr_text, "hit 4"));
  }
  SECTION("1_in_1 fires on the first hit") {
    const ProbeRun run = RunProbe(dir, "one", {"CAIRN_KILLPOINT=probe:1_in_1"});
    INFO(run.stderr_text);
    CHECK(run.status.signal == SIGKILL);
    CHECK(Contains(run.stderr_text, "killpoint probe fired (hit 1)\n"));
  }
  SECTION("without the variable, or for another name, the probe finishes") {
    for (const std::vector<std::string>& env :
         {std::vector<std::string>{}, std::vector<std::string>{"CAIRN_KILLPOINT=other:at_1"},
          std::vector<std::string>{"CAIRN_KILLPOINT=probe:at_11"}}) {
      const ProbeRun run = RunProbe(dir, "none", env);
      INFO(run.stderr_text);
      CHECK(run.status.exited());
      CHECK(run.status.code == 0);
      CHECK_FALSE(Contains(run.stderr_text, "fired"));
    }
  }
  SECTION("1_in_N with a seed is reproducible and logs the seed") {
    const ProbeRun a =
        RunProbe(dir, "seed_a", {"CAIRN_KILLPOINT=probe:1_in_4", "CAIRN_KILLPOINT_SEED=7"});
    const ProbeRun b =
        RunProbe(dir, "seed_b", {"CAIRN_KILLPOINT=probe:1_in_4", "CAIRN_KILLPOINT_SEED=7"});
    INFO(a.stderr_text);
    CHECK(Contains(a.stderr_text, "killpoint: CAIRN_KILLPOINT=probe:1_in_4 seed 7\n"));
    CHECK(a.stderr_text == b.stderr_text);
    CHECK(a.status.signal == b.status.signal);
  }
  SECTION("a stall sleeps at its hit and the process goes on") {
    const absl::Time start = absl::Now();
    const ProbeRun run = RunProbe(dir, "stall", {"CAIRN_KILLPOINT=probe:at_2:stall_300"});
    INFO(run.stderr_text);
    CHECK(run.status.exited());
    CHECK(run.status.code == 0);
    CHECK(Contains(run.stderr_text, "killpoint probe stalls 300 ms (hit 2)\n"));
    CHECK(absl::Now() - start >= absl::Milliseconds(300));
  }
  SECTION("a bad spec aborts at the first kill point, naming the spec") {
    const ProbeRun run = RunProbe(dir, "bad", {"CAIRN_KILLPOINT=probe:sometimes"});
    INFO(run.stderr_text);
    CHECK(run.status.signal == SIGABRT);
    CHECK(Contains(run.stderr_text,
                   "killpoint: bad CAIRN_KILLPOINT=probe:sometimes: rule \"probe:sometimes\""));
  }
#endif
}

TEST_CASE("histories round-trip, and an operation never completed reads as info",
          "[reliability][history]") {
  const std::string dir = TempDir("history");
  const std::string path = dir + "/worker-3.jsonl";
  {
    auto writer = HistoryWriter::Open(path);
    REQUIRE(writer.ok());
    HistoryRecord r;
    r.worker = 3;
    r.step = 5;
    r.table = "dense";
    r.keys = 10;
    r.delta_checksum = "0123456789abcdef";
    auto first = (*writer)->Invoke(r);
    REQUIRE(first.ok());
    CHECK(*first == 0);
    r.table = "emb";
    auto second = (*writer)->Invoke(r);
    REQUIRE(second.ok());
    REQUIRE((*writer)->Complete(*first, Outcome::kOk).ok());
    CHECK((*writer)->Complete(*first, Outcome::kOk).code() == absl::StatusCode::kInvalidArgument);
    // `second` is left pending, as by a worker killed mid-push.
  }
  {
    auto reopened = HistoryWriter::Open(path);  // a restarted worker continues the seqs
    REQUIRE(reopened.ok());
    HistoryRecord r;
    r.worker = 3;
    r.step = 6;
    r.table = "dense";
    auto third = (*reopened)->Invoke(r);
    REQUIRE(third.ok());
    CHECK(*third == 2);
    REQUIRE((*reopened)->Complete(*third, Outcome::kFail, "rejected").ok());
  }
  REQUIRE(testing::WriteFile(dir + "/ignored.txt", "not a history").ok());
  auto records = ReadHistoryDir(dir);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  const HistoryRecord& a = (*records)[0];
  CHECK(a.worker == 3);
  CHECK(a.step == 5);
  CHECK(a.seq == 0);
  CHECK(a.table == "dense");
  CHECK(a.keys == 10);
  CHECK(a.delta_checksum == "0123456789abcdef");
  CHECK(a.outcome == Outcome::kOk);
  CHECK(a.t_complete_ms >= a.t_invoke_ms);
  CHECK(a.t_invoke_ms > 1600000000000);  // Unix ms
  CHECK((*records)[1].table == "emb");
  CHECK((*records)[1].outcome == Outcome::kInfo);
  CHECK((*records)[1].t_complete_ms == -1);
  CHECK((*records)[2].outcome == Outcome::kFail);
  CHECK((*records)[2].error == "rejected");

  REQUIRE(testing::WriteFile(dir + "/broken.jsonl", "{\"worker\":1}\n").ok());
  auto broken = ReadHistoryDir(dir);
  REQUIRE_FALSE(broken.ok());
  CHECK(Contains(std::string(broken.status().message()), "broken.jsonl:1: field \"step\""));
}

Workload SmallWorkload() {
  Workload w;
  w.dense_table = "dense";
  w.dense_size = 1000;
  w.sparse_table = "emb";
  w.sparse_width = 4;
  w.sparse_key_count = 100;
  w.sparse_keys_per_step = 10;
  return w;
}

// A history of `workers` x `steps` acknowledged pushes to every table.
std::vector<HistoryRecord> AckedHistory(const Workload& w, int workers, int64_t steps) {
  std::vector<HistoryRecord> history;
  for (int worker = 0; worker < workers; ++worker) {
    for (int64_t step = 0; step < steps; ++step) {
      for (const std::string& table : w.Tables()) {
        auto delta = StepDelta(w, table, worker, step);
        REQUIRE(delta.ok());
        HistoryRecord r;
        r.worker = worker;
        r.step = step;
        r.seq = static_cast<int64_t>(history.size());
        r.table = table;
        r.delta_checksum = DeltaChecksum(delta->keys, delta->values);
        r.outcome = Outcome::kOk;
        history.push_back(r);
      }
    }
  }
  return history;
}

// Values as pulled from a server: sparse tables list the whole key universe.
JobValues AsPulled(const Workload& w, JobValues values) {
  TableValues& emb = values.at(w.sparse_table);
  std::map<Key, std::vector<float>> rows;
  for (size_t k = 0; k < emb.keys.size(); ++k) {
    rows[emb.keys[k]].assign(emb.values.begin() + k * emb.width,
                             emb.values.begin() + (k + 1) * emb.width);
  }
  emb.keys = SparseKeyUniverse(w);
  emb.values.clear();
  for (Key key : emb.keys) {
    auto it = rows.find(key);
    for (int c = 0; c < emb.width; ++c) {
      emb.values.push_back(it == rows.end() ? 0.0f : it->second[c]);
    }
  }
  return values;
}

// Moves `values` by -times * delta of (worker, step, table): applies the
// push `times` more times (negative: removes it).
void Apply(const Workload& w, int worker, int64_t step, const std::string& table, int times,
           JobValues* values) {
  auto delta = StepDelta(w, table, worker, step);
  REQUIRE(delta.ok());
  TableValues& t = values->at(table);
  if (!delta->sparse) {
    for (size_t i = 0; i < delta->values.size(); ++i) t.values[i] -= times * delta->values[i];
    return;
  }
  for (size_t k = 0; k < delta->keys.size(); ++k) {
    auto it = std::lower_bound(t.keys.begin(), t.keys.end(), delta->keys[k]);
    REQUIRE(it != t.keys.end());
    const size_t row = it - t.keys.begin();
    for (int c = 0; c < t.width; ++c) {
      t.values[row * t.width + c] -= times * delta->values[k * t.width + c];
    }
  }
}

TEST_CASE("the workload is deterministic and its sums are exact integers",
          "[reliability][oracle]") {
  const Workload w = SmallWorkload();
  REQUIRE(w.Validate().ok());
  CHECK(Gradient(1, 7, "dense", 3, 0) == Gradient(1, 7, "dense", 3, 0));
  const std::vector<Key> keys = SparseStepKeys(w, 1, 7);
  CHECK(keys.size() == 10);
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
  CHECK(keys != SparseStepKeys(w, 0, 7));
  int distinct_values = 0;
  for (int v = -3; v <= 3; ++v) {
    for (int64_t i = 0; i < 1000; ++i) {
      if (Gradient(0, 0, "dense", i, 0) == static_cast<float>(v)) {
        ++distinct_values;
        break;
      }
    }
  }
  CHECK(distinct_values == 7);  // every integer of [-3, 3] occurs
  const JobValues two = ExpectedAtClock(w, 2, {0, 1});
  const JobValues by_steps = ExpectedValues(w, {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  CHECK(Compare(two, by_steps).ok());
  CHECK(two.at("dense").values[5] ==
        -(Gradient(0, 0, "dense", 5, 0) + Gradient(0, 1, "dense", 5, 0) +
          Gradient(1, 0, "dense", 5, 0) + Gradient(1, 1, "dense", 5, 0)));
  const Comparison differs = Compare(two, ExpectedAtClock(w, 3, {0, 1}));
  // A dense element stays put when its two new gradients cancel (1 in 7).
  CHECK(differs.mismatched_keys > 800);
  CHECK(differs.first.size() == 10);
}

TEST_CASE("the oracle attributes lost, duplicate and unexpected pushes exactly",
          "[reliability][oracle]") {
  const Workload w = SmallWorkload();
  std::vector<HistoryRecord> history = AckedHistory(w, 2, 30);
  const JobValues clean = AsPulled(w, ExpectedAtClock(w, 30, {0, 1}));

  SECTION("a clean run") {
    const OracleReport report = Check(w, history, clean);
    INFO(report.ToString());
    CHECK(report.ok == 120);
    CHECK(report.ok_all());
    CHECK(report.unexplained.compared_keys == 1100);
  }
  SECTION("one lost dense push, one duplicated sparse push, one never invoked") {
    JobValues final_values = clean;
    Apply(w, 1, 7, "dense", -1, &final_values);
    Apply(w, 0, 3, "emb", +1, &final_values);
    Apply(w, 0, 30, "dense", +1, &final_values);  // worker 0 never invoked step 30
    const OracleReport report = Check(w, history, final_values);
    INFO(report.ToString());
    CHECK(report.lost == 1);
    CHECK(report.duplicates == 1);
    CHECK(report.unexpected == 1);
    CHECK(report.unexplained.ok());
    CHECK_FALSE(report.ok_all());
    const std::string text = report.ToString();
    CHECK(Contains(text, "lost: worker 1 step 7 table dense"));
    CHECK(Contains(text, "duplicate (applied 2 times): worker 0 step 3 table emb"));
    CHECK(Contains(text, "unexpected (never invoked): worker 0 step 30 table dense"));
  }
  SECTION("several overlapping faults on the same tables") {
    JobValues final_values = clean;
    for (int step : {2, 9, 17, 25}) Apply(w, step % 2, step, "dense", -1, &final_values);
    for (int step : {4, 11, 29}) Apply(w, 1, step, "dense", +1, &final_values);
    Apply(w, 0, 8, "dense", +2, &final_values);  // applied three times
    for (int step : {1, 5}) Apply(w, 0, step, "emb", -1, &final_values);
    const OracleReport report = Check(w, history, final_values);
    INFO(report.ToString());
    CHECK(report.lost == 6);
    CHECK(report.duplicates == 5);
    CHECK(report.unexpected == 0);
    CHECK(report.unexplained.ok());
  }
  SECTION("info pushes may or may not be applied; failed ones must not be") {
    history[10].outcome = Outcome::kInfo;  // applied in `clean`
    history[11].outcome = Outcome::kInfo;
    history[12].outcome = Outcome::kFail;
    JobValues final_values = clean;
    Apply(w, history[11].worker, history[11].step, history[11].table, -1, &final_values);
    const OracleReport report = Check(w, history, final_values);
    INFO(report.ToString());
    CHECK(report.info == 2);
    CHECK(report.info_applied == 1);
    CHECK(report.unexpected == 1);  // the failed one was applied
    CHECK(report.lost == 0);
    CHECK(report.unexplained.ok());
  }
  SECTION("a record that does not match the workload, and a value nothing explains") {
    history[0].delta_checksum = "0000000000000000";
    JobValues final_values = clean;
    final_values.at("dense").values[17] += 0.5f;
    const OracleReport report = Check(w, history, final_values);
    INFO(report.ToString());
    CHECK(report.checksum_mismatches == 1);
    CHECK(report.unexplained.mismatched_keys == 1);
    REQUIRE(report.unexplained.first.size() == 1);
    CHECK(report.unexplained.first[0].key == 17);
  }
}

std::string JobYaml() {
  return R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 2
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
  - name: dense
    kind: dense
    shape: [1000]
    chunk_size: 100
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
  - name: emb
    kind: sparse
    width: 4
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
)";
}

TEST_CASE("two chaos workers on two servers: a clean BSP run matches the oracle exactly",
          "[reliability][integration]") {
  constexpr int64_t kSteps = 30;
  const Workload w = SmallWorkload();
  auto cluster = testing::TestCluster::Start("harness", JobYaml(), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const std::string history_dir = (*cluster)->dir() + "/history";
  std::filesystem::create_directories(history_dir);

  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int i = 0; i < 2; ++i) {
    auto worker = Subprocess::Spawn(
        kChaosWorker,
        {"--coordinator", (*cluster)->coordinator_address(), "--worker-id", std::to_string(i),
         "--steps", std::to_string(kSteps), "--history",
         absl::StrCat(history_dir, "/worker-", i, ".jsonl"), "--dense-table", "dense",
         "--sparse-table", "emb", "--sparse-keys", "100", "--sparse-keys-per-step", "10"},
        absl::StrCat((*cluster)->dir(), "/chaos-worker-", i));
    REQUIRE(worker.ok());
    workers.push_back(*std::move(worker));
  }
  for (auto& worker : workers) {
    absl::StatusOr<ExitStatus> ended = worker->Wait(absl::Seconds(45));
    INFO(worker->ReadStderr() << (*cluster)->Logs());
    REQUIRE(ended.ok());
    CHECK(ended->ToString() == "exit code 0");
  }

  // Read everything back through a fresh client (no cache).
  ClientOptions options;
  options.coordinator = (*cluster)->coordinator_address();
  options.connect_timeout = absl::Seconds(20);
  options.rpc_deadline = absl::Seconds(20);
  options.cache_bytes = 0;
  auto reader = Client::Connect(options);
  INFO(reader.status().message());
  REQUIRE(reader.ok());
  JobValues final_values;
  TableValues& dense = final_values["dense"];
  dense.table = "dense";
  dense.values.resize(w.dense_size);
  REQUIRE((*reader)->PullDense({{"dense", absl::MakeSpan(dense.values)}}).get().ok());
  TableValues& emb = final_values["emb"];
  emb.table = "emb";
  emb.sparse = true;
  emb.width = w.sparse_width;
  emb.keys = SparseKeyUniverse(w);
  emb.values.resize(emb.keys.size() * emb.width);
  REQUIRE((*reader)->PullSparse("emb", emb.keys, absl::MakeSpan(emb.values)).get().ok());
  CHECK((*reader)->Finish().ok());

  auto history = ReadHistoryDir(history_dir);
  INFO(history.status().message());
  REQUIRE(history.ok());
  CHECK(history->size() == 2 * kSteps * 2);  // workers x steps x tables
  const OracleReport report = Check(w, *history, final_values);
  INFO(report.ToString());
  CHECK(report.ok == 2 * kSteps * 2);
  CHECK(report.info == 0);
  CHECK(report.checksum_mismatches == 0);
  CHECK(report.lost == 0);
  CHECK(report.unexpected == 0);
  CHECK(report.duplicates == 0);
  CHECK(report.unexplained.ok());

  const Comparison at_clock = Compare(ExpectedAtClock(w, kSteps, {0, 1}), final_values);
  INFO(at_clock.ToString());
  CHECK(at_clock.ok());
  CHECK(at_clock.compared_keys == 1000 + 100);
  // Not trivially zero: the sums moved the values.
  CHECK(std::count(dense.values.begin(), dense.values.end(), 0.0f) < 200);
}

TEST_CASE("the chaos worker refuses a table that cannot hold exact sums",
          "[reliability][integration]") {
  std::string yaml = JobYaml();
  const std::string sum = "    aggregation: sum\n";
  yaml.replace(yaml.rfind(sum), sum.size(), "    aggregation: mean\n");
  yaml.replace(yaml.find("workers: 2"), 10, "workers: 1");
  auto cluster = testing::TestCluster::Start("harness_mean", yaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto worker = Subprocess::Spawn(
      kChaosWorker,
      {"--coordinator", (*cluster)->coordinator_address(), "--steps", "3", "--history",
       (*cluster)->dir() + "/worker.jsonl", "--dense-table", "dense", "--sparse-table", "emb"},
      (*cluster)->dir() + "/chaos-worker");
  REQUIRE(worker.ok());
  absl::StatusOr<ExitStatus> ended = (*worker)->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->ToString() == "exit code 2");
  CHECK(Contains((*worker)->ReadStderr(), "cairn-chaos-worker: table emb: needs aggregation: sum"));
}

}  // namespace
}  // namespace cairn::reliability
