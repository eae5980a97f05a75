// cairn-chaos-worker: a worker of the reliability tests. It joins a Cairn
// job like cairn-worker, then at each iteration pulls, pushes the
// deterministic gradients of workload.h to one dense and/or one sparse
// table, and clocks, recording every push in its history file (history.h)
// so the oracle (oracle.h) can check the servers' final values.
//
// It starts at the clock the coordinator gives it (0 in a fresh job; a
// worker that joins a running job, or a resumed one, starts later) and runs
// until its clock reaches --steps.
//
// The tables must be set up for exact arithmetic: SGD with learning rate 1,
// no momentum or weight decay, zeros init, aggregation sum.
//
// Exit codes (as cairn-worker): 0 done; 1 failed; 2 bad flags or tables;
// 4 coordinator unreachable or start-up barrier timed out; 5 cluster lost
// while running (Unavailable, DeadlineExceeded, Aborted).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cairn/v1/types.pb.h"
#include "common/daemon.h"
#include "common/partitioning.h"
#include "common/log.h"
#include "tests/reliability/history.h"
#include "tests/reliability/workload.h"
#include "worker/client/client.h"

namespace cairn::reliability {
namespace {

// Exit codes of common/daemon.h, named as cairn-worker's.
constexpr int kExitFailed = kExitFailure;
constexpr int kExitConfig = kExitBadConfig;
constexpr int kExitLost = kExitLostCoordinator;

struct Flags {
  std::string coordinator;
  int worker_id = -1;
  int64_t steps = 0;
  std::string history;
  std::string dense_table;
  std::string sparse_table;
  int sparse_keys = 100;
  int sparse_keys_per_step = 10;
  double rpc_deadline_seconds = 20;
  double connect_timeout_seconds = 30;
  double seconds = 0;  // > 0: also stop at the first step boundary after this long
  std::string log_level = "info";
};

int Fail(int code, const absl::Status& status) {
  const std::string message = absl::StrReplaceAll(status.message(), {{"\n", "; "}});
  std::fprintf(stderr, "cairn-chaos-worker: %s\n", message.c_str());
  return code;
}

int LostOrFailed(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return Fail(kExitLost, status);
    default:
      return Fail(kExitFailed, status);
  }
}

// InvalidArgument naming the table when it cannot hold exact sums.
absl::Status CheckExact(const v1::TableSpec& t) {
  const v1::OptimizerSpec& o = t.optimizer();
  if (o.kind() != v1::OPTIMIZER_KIND_SGD || o.learning_rate() != 1.0f || o.momentum() != 0 ||
      o.weight_decay() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", t.name(),
                     ": needs optimizer {type: sgd, learning_rate: 1} without momentum "
                     "or weight decay for exact sums"));
  }
  if (t.init().kind() != v1::INIT_KIND_ZEROS) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", t.name(), ": needs init {type: zeros}"));
  }
  if (t.aggregation() != v1::AGGREGATION_SUM) {
    return absl::InvalidArgumentError(absl::StrCat("table ", t.name(), ": needs aggregation: sum"));
  }
  return absl::OkStatus();
}

// Fills in the sizes of `w`'s tables from the job and checks their setup.
absl::Status DescribeWorkload(const Client& client, Workload* w) {
  if (!w->dense_table.empty()) {
    absl::StatusOr<const v1::TableSpec*> t = client.Table(w->dense_table);
    if (!t.ok()) return t.status();
    if ((*t)->kind() != v1::TABLE_KIND_DENSE) {
      return absl::InvalidArgumentError(absl::StrCat("table ", w->dense_table, " is not dense"));
    }
    if (absl::Status s = CheckExact(**t); !s.ok()) return s;
    w->dense_size = static_cast<int64_t>(DenseNumElements(**t));
  }
  if (!w->sparse_table.empty()) {
    absl::StatusOr<const v1::TableSpec*> t = client.Table(w->sparse_table);
    if (!t.ok()) return t.status();
    if ((*t)->kind() != v1::TABLE_KIND_SPARSE) {
      return absl::InvalidArgumentError(absl::StrCat("table ", w->sparse_table, " is not sparse"));
    }
    if (absl::Status s = CheckExact(**t); !s.ok()) return s;
    w->sparse_width = static_cast<int>((*t)->width());
  }
  return w->Validate();
}

// Keys of a push as the history counts them: sparse rows, or dense chunks.
int64_t KeyCount(const Client& client, const TableDelta& delta) {
  if (delta.sparse) return static_cast<int64_t>(delta.keys.size());
  absl::StatusOr<const v1::TableSpec*> t = client.Table(delta.table);
  const int64_t chunk = t.ok() && (*t)->chunk_size() > 0 ? (*t)->chunk_size() : 1;
  return (static_cast<int64_t>(delta.values.size()) + chunk - 1) / chunk;
}

// One iteration: pull, push every table (recorded), clock.
absl::Status RunStep(Client& client, const Workload& w, HistoryWriter& history, int64_t step) {
  const int worker = static_cast<int>(client.worker_id());
  std::vector<float> dense(w.dense_size);
  std::vector<Key> pull_keys;
  std::vector<float> rows;
  std::vector<std::future<absl::Status>> pulls;
  if (!w.dense_table.empty()) {
    pulls.push_back(client.PullDense({{w.dense_table, absl::MakeSpan(dense)}}));
  }
  if (!w.sparse_table.empty()) {
    pull_keys = SparseStepKeys(w, worker, step);
    rows.resize(pull_keys.size() * w.sparse_width);
    pulls.push_back(client.PullSparse(w.sparse_table, pull_keys, absl::MakeSpan(rows)));
  }
  absl::Status pulled = absl::OkStatus();
  for (auto& p : pulls) pulled.Update(p.get());
  if (!pulled.ok()) return pulled;

  struct Pending {
    TableDelta delta;
    int64_t seq;
    std::future<absl::Status> done;
  };
  std::vector<Pending> pushes;
  for (const std::string& table : w.Tables()) {
    absl::StatusOr<TableDelta> delta = StepDelta(w, table, worker, step);
    if (!delta.ok()) return delta.status();
    HistoryRecord record;
    record.worker = worker;
    record.step = step;
    record.table = table;
    record.keys = KeyCount(client, *delta);
    record.delta_checksum = DeltaChecksum(delta->keys, delta->values);
    absl::StatusOr<int64_t> seq = history.Invoke(record);
    if (!seq.ok()) return seq.status();
    pushes.push_back(Pending{*std::move(delta), *seq, {}});
    Pending& p = pushes.back();
    p.done = p.delta.sparse ? client.PushSparse(table, p.delta.keys, p.delta.values)
                            : client.PushDense({{table, p.delta.values}});
  }
  absl::Status pushed = absl::OkStatus();
  for (Pending& p : pushes) {
    const absl::Status s = p.done.get();
    // A failed push may still have reached some servers: its outcome is
    // unknown (info), never "fail".
    absl::Status recorded = s.ok() ? history.Complete(p.seq, Outcome::kOk)
                                   : history.Complete(p.seq, Outcome::kInfo, s.ToString());
    pushed.Update(s);
    pushed.Update(recorded);
  }
  if (!pushed.ok()) return pushed;
  return client.Clock();
}

int Run(const Flags& flags) {
  Workload w;
  w.dense_table = flags.dense_table;
  w.sparse_table = flags.sparse_table;
  w.sparse_key_count = flags.sparse_keys;
  w.sparse_keys_per_step = flags.sparse_keys_per_step;
  if (w.dense_table.empty() && w.sparse_table.empty()) {
    return Fail(kExitConfig,
                absl::InvalidArgumentError("give --dense-table, --sparse-table or both"));
  }
  absl::StatusOr<std::unique_ptr<HistoryWriter>> history = HistoryWriter::Open(flags.history);
  if (!history.ok()) return Fail(kExitConfig, history.status());

  ClientOptions options;
  options.coordinator = flags.coordinator;
  options.worker_id = flags.worker_id;
  options.connect_timeout = absl::Seconds(flags.connect_timeout_seconds);
  options.rpc_deadline = absl::Seconds(flags.rpc_deadline_seconds);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!client.ok()) {
    const bool bad = client.status().code() == absl::StatusCode::kInvalidArgument;
    return Fail(bad ? kExitConfig : kExitUnreachable, client.status());
  }
  Client& c = **client;
  if (absl::Status s = DescribeWorkload(c, &w); !s.ok()) return Fail(kExitConfig, s);
  const int64_t start = c.clock();
  LOG_INFO(
      "chaos worker {}: clocks {}..{}, dense {} ({} floats), sparse {} (width {}, {} of {} "
      "keys per step), history {}",
      c.worker_id(), start, flags.steps, w.dense_table, w.dense_size, w.sparse_table,
      w.sparse_width, w.sparse_keys_per_step, w.sparse_key_count, flags.history);
  const absl::Time stop_at = flags.seconds > 0
                                ? absl::Now() + absl::Seconds(flags.seconds)
                                : absl::InfiniteFuture();
  int64_t step = start;
  for (; step < flags.steps && absl::Now() < stop_at; ++step) {
    if (absl::Status s = RunStep(c, w, **history, step); !s.ok()) {
      return LostOrFailed(absl::Status(s.code(), absl::StrCat("step ", step, ": ", s.message())));
    }
  }
  if (absl::Status s = c.Finish(); !s.ok()) return LostOrFailed(s);
  LOG_INFO("chaos worker {}: done at clock {}", c.worker_id(), step);
  return kExitOk;
}

}  // namespace
}  // namespace cairn::reliability

int main(int argc, char** argv) {
  cairn::TuneAllocator();
  cairn::reliability::Flags flags;
  CLI::App app{
      "cairn-chaos-worker: pushes the reliability tests' deterministic gradients to a Cairn job "
      "and records each push in a JSONL history"};
  app.footer(
      "Exit codes: 0 done; 1 failed; 2 bad flags or tables; 4 coordinator unreachable or "
      "start-up barrier timed out; 5 cluster lost.");
  app.add_option("--coordinator", flags.coordinator, "coordinator host:port")->required();
  app.add_option("--worker-id", flags.worker_id, "worker id to ask for (default: assigned)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--steps", flags.steps,
                 "run until the worker's clock reaches this (from the clock it starts at)")
      ->required()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seconds", flags.seconds,
                 "also stop (and leave the job cleanly) at the first step boundary after this "
                 "many seconds of pushing")
      ->check(CLI::PositiveNumber);
  app.add_option("--history", flags.history, "JSONL history file (appended to)")->required();
  app.add_option("--dense-table", flags.dense_table, "dense table to push the whole of");
  app.add_option("--sparse-table", flags.sparse_table, "sparse table to push rows of");
  app.add_option("--sparse-keys", flags.sparse_keys, "size of the sparse key universe")
      ->check(CLI::PositiveNumber);
  app.add_option("--sparse-keys-per-step", flags.sparse_keys_per_step,
                 "distinct sparse rows pushed per step")
      ->check(CLI::PositiveNumber);
  app.add_option("--rpc-deadline", flags.rpc_deadline_seconds, "seconds per RPC")
      ->check(CLI::PositiveNumber);
  app.add_option("--connect-timeout", flags.connect_timeout_seconds,
                 "seconds to reach the coordinator and pass the start-up barrier")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : cairn::reliability::kExitConfig;
  }
  cairn::InitLogging("chaos-worker", flags.log_level);
  return cairn::reliability::Run(flags);
}
