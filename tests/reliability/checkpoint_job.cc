#include "tests/reliability/checkpoint_job.h"

#include <signal.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpoint_reader.h"

namespace cairn::reliability {
namespace {

constexpr char kChaosWorker[] = CAIRN_BINARY_DIR "/tests/reliability/cairn-chaos-worker";

ClientOptions ReaderOptions(const testing::TestCluster& cluster, int worker_id) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = worker_id;
  options.connect_timeout = absl::Seconds(30);
  options.rpc_deadline = absl::Seconds(20);
  options.cache_bytes = 0;
  return options;
}

// The unsigned number after `prefix` in `text` at `pos`; advances `pos`.
bool ReadNumberAfter(const std::string& text, const std::string& prefix, size_t* pos,
                     int64_t* out) {
  const size_t at = text.find(prefix, *pos);
  if (at == std::string::npos) return false;
  size_t begin = at + prefix.size();
  size_t end = begin;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  *pos = end;
  return end > begin && absl::SimpleAtoi(text.substr(begin, end - begin), out);
}

}  // namespace

Workload CheckpointWorkload() {
  Workload w;
  w.dense_table = "dense";
  w.dense_size = 100000;
  w.sparse_table = "emb";
  w.sparse_width = 4;
  w.sparse_key_count = 100;
  w.sparse_keys_per_step = 10;
  return w;
}

std::string WorkloadTablesYaml(int64_t dense_size, int64_t chunk_size) {
  return absl::StrCat(R"(  - name: dense
    kind: dense
    shape: [)", dense_size, R"(]
    chunk_size: )", chunk_size, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
  - name: emb
    kind: sparse
    width: 4
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
)");
}

std::string CheckpointJobYaml(const CheckpointJobOptions& options) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 3
  partitions: 8
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
  state_dir: none
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
)", WorkloadTablesYaml(), R"(checkpoint:
  dir: )", options.checkpoint_dir, R"(
  every_clocks: )", options.every_clocks, R"(
  keep: )", options.keep, R"(
  resume: ")", options.resume, R"("
)");
}

absl::StatusOr<std::vector<std::unique_ptr<testing::Subprocess>>> SpawnChaosWorkers(
    const testing::TestCluster& cluster, int64_t steps, const std::string& history_dir) {
  std::vector<std::unique_ptr<testing::Subprocess>> workers;
  for (int i = 0; i < kChaosWorkers; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<testing::Subprocess> worker,
                     SpawnChaosWorker(cluster, i, steps, history_dir));
    workers.push_back(std::move(worker));
  }
  return workers;
}

absl::StatusOr<std::unique_ptr<testing::Subprocess>> SpawnChaosWorker(
    const testing::TestCluster& cluster, int id, int64_t steps, const std::string& history_dir,
    const std::vector<std::string>& extra_args) {
  std::vector<std::string> args = {
      "--coordinator", cluster.coordinator_address(), "--worker-id", absl::StrCat(id),
      "--steps", absl::StrCat(steps), "--history",
      absl::StrCat(history_dir, "/worker-", id, ".jsonl"), "--dense-table", "dense",
      "--sparse-table", "emb", "--sparse-keys", "100", "--sparse-keys-per-step", "10",
      "--rpc-deadline", "10", "--connect-timeout", "30"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return testing::Subprocess::Spawn(kChaosWorker, args,
                                    absl::StrCat(cluster.dir(), "/chaos-worker-", id));
}

absl::StatusOr<JobValues> PullValues(Client& client, const Workload& w) {
  JobValues values;
  TableValues& dense = values[w.dense_table];
  dense.table = w.dense_table;
  dense.values.resize(w.dense_size);
  RETURN_IF_ERROR(client.PullDense({{w.dense_table, absl::MakeSpan(dense.values)}}).get());
  TableValues& emb = values[w.sparse_table];
  emb.table = w.sparse_table;
  emb.sparse = true;
  emb.width = w.sparse_width;
  emb.keys = SparseKeyUniverse(w);
  emb.values.resize(emb.keys.size() * emb.width);
  RETURN_IF_ERROR(client.PullSparse(w.sparse_table, emb.keys, absl::MakeSpan(emb.values)).get());
  return values;
}

absl::StatusOr<Observation> ObserveAndLeave(const testing::TestCluster& cluster,
                                            const Workload& w) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                   Client::Connect(ReaderOptions(cluster, kObserverId)));
  Observation seen;
  seen.clock = client->clock();
  ASSIGN_OR_RETURN(seen.values, PullValues(*client, w));
  RETURN_IF_ERROR(client->Finish());
  return seen;
}

absl::Status StopGracefully(testing::TestCluster& cluster) {
  std::vector<testing::Subprocess*> all;
  for (int i = 0; i < cluster.num_servers(); ++i) all.push_back(&cluster.server(i));
  all.push_back(&cluster.coordinator());
  for (testing::Subprocess* p : all) RETURN_IF_ERROR(p->Signal(SIGTERM));
  for (testing::Subprocess* p : all) {
    absl::StatusOr<testing::ExitStatus> ended = p->Wait(absl::Seconds(20));
    if (!ended.ok() || ended->ToString() != "exit code 0") {
      const std::string log = p->ReadStderr();
      return absl::FailedPreconditionError(absl::StrCat(
          p->binary(), " (pid ", p->pid(), ") did not stop cleanly: ",
          ended.ok() ? ended->ToString() : std::string(ended.status().message()), "\n",
          log.substr(log.size() > 4000 ? log.size() - 4000 : 0)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobValues> ReadFinalValues(const testing::TestCluster& cluster,
                                          const Workload& w) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(ReaderOptions(cluster, -1)));
  ASSIGN_OR_RETURN(JobValues values, PullValues(*client, w));
  RETURN_IF_ERROR(client->Finish());
  return values;
}

std::vector<LoggedRecord> CompletedCheckpoints(const std::string& coordinator_stderr) {
  std::vector<LoggedRecord> out;
  std::istringstream lines(coordinator_stderr);
  std::string line;
  while (std::getline(lines, line)) {
    size_t pos = 0;
    int64_t clock = -1;
    int64_t record = 0;
    if (ReadNumberAfter(line, "checkpoint at clock ", &pos, &clock) &&
        line.compare(pos, 10, " complete:") == 0 &&
        ReadNumberAfter(line, "recorded as checkpoint record ", &pos, &record)) {
      out.push_back({clock, static_cast<uint64_t>(record)});
    }
  }
  return out;
}

std::optional<LoggedRecord> ResumedFrom(const std::string& coordinator_stderr) {
  size_t pos = 0;
  int64_t record = 0;
  int64_t clock = -1;
  if (!ReadNumberAfter(coordinator_stderr, "resuming from checkpoint record ", &pos, &record) ||
      !ReadNumberAfter(coordinator_stderr, " at clock ", &pos, &clock)) {
    return std::nullopt;
  }
  return LoggedRecord{clock, static_cast<uint64_t>(record)};
}

absl::StatusOr<std::vector<StoredCheckpoint>> StoreCheckpoints(const std::string& checkpoint_dir,
                                                               uint32_t server_id) {
  absl::StatusOr<std::unique_ptr<checkpoint::CheckpointReader>> reader =
      checkpoint::CheckpointReader::Open(checkpoint::ServerStoreDir(checkpoint_dir, server_id));
  if (absl::IsNotFound(reader.status())) return std::vector<StoredCheckpoint>{};
  if (!reader.ok()) return reader.status();
  ASSIGN_OR_RETURN(std::vector<checkpoint::Manifest> manifests, (*reader)->List());
  std::vector<StoredCheckpoint> out;
  for (const checkpoint::Manifest& m : manifests) out.push_back({m.id, m.clock});
  return out;
}

std::string ToString(const std::vector<StoredCheckpoint>& checkpoints) {
  std::string out;
  for (const StoredCheckpoint& c : checkpoints) {
    absl::StrAppend(&out, out.empty() ? "" : " ", c.id, "@", c.clock);
  }
  return out;
}

const JobValues& ExpectedStates::At(int64_t clock) {
  std::vector<int> workers;
  for (int i = 0; i < kChaosWorkers; ++i) workers.push_back(i);
  if (clock < clock_ || clock_ < 0) {
    values_ = ExpectedAtClock(workload_, clock, workers);
    clock_ = clock;
    return values_;
  }
  std::set<StepId> steps;
  for (int w : workers) {
    for (int64_t s = clock_; s < clock; ++s) steps.insert(StepId{w, s});
  }
  const JobValues delta = ExpectedValues(workload_, steps);
  // Integer-valued floats below 2^24 add exactly, in any order.
  for (const auto& [name, d] : delta) {
    TableValues& t = values_[name];
    if (!d.sparse) {
      for (size_t i = 0; i < d.values.size(); ++i) t.values[i] += d.values[i];
      continue;
    }
    std::map<Key, std::vector<float>> rows;
    for (size_t k = 0; k < t.keys.size(); ++k) {
      rows[t.keys[k]].assign(t.values.begin() + k * t.width, t.values.begin() + (k + 1) * t.width);
    }
    for (size_t k = 0; k < d.keys.size(); ++k) {
      std::vector<float>& row = rows[d.keys[k]];
      row.resize(d.width, 0.0f);
      for (int c = 0; c < d.width; ++c) row[c] += d.values[k * d.width + c];
    }
    t.keys.clear();
    t.values.clear();
    for (const auto& [key, row] : rows) {
      t.keys.push_back(key);
      t.values.insert(t.values.end(), row.begin(), row.end());
    }
  }
  clock_ = clock;
  return values_;
}

bool BitwiseEqual(const JobValues& expected, const JobValues& actual) {
  if (expected.size() != actual.size()) return false;
  for (const auto& [name, e] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return false;
    const TableValues& a = it->second;
    if (e.sparse != a.sparse || e.width != a.width) return false;
    if (!e.sparse) {
      if (e.values.size() != a.values.size() ||
          std::memcmp(e.values.data(), a.values.data(), e.values.size() * sizeof(float)) != 0) {
        return false;
      }
      continue;
    }
    std::map<Key, const float*> rows;
    for (size_t k = 0; k < e.keys.size(); ++k) rows[e.keys[k]] = &e.values[k * e.width];
    const std::vector<float> zeros(e.width, 0.0f);
    for (size_t k = 0; k < a.keys.size(); ++k) {
      auto row = rows.find(a.keys[k]);
      const float* want = row == rows.end() ? zeros.data() : row->second;
      if (std::memcmp(want, &a.values[k * a.width], e.width * sizeof(float)) != 0) return false;
      if (row != rows.end()) rows.erase(row);
    }
    if (!rows.empty()) return false;  // a key the pull did not cover
  }
  return true;
}

}  // namespace cairn::reliability
