#include "server/shard/shard.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_join.h"
#include "common/bytes.h"
#include "common/killpoint.h"
#include "common/log.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "common/wire_dtype.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/cold_rows.h"
#include "server/shard/dense_table.h"
#include "server/shard/fork_join.h"
#include "server/shard/piece_rows.h"
#include "server/shard/shard_metrics.h"
#include "server/shard/sparse_table.h"

namespace cairn {
namespace {

constexpr int64_t kNoWait = std::numeric_limits<int64_t>::min();

absl::StatusOr<size_t> CountKeys(const std::string& bytes, const std::string& table) {
  size_t n = 0;
  if (!NumKeys(bytes, &n)) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, ": keys take ", bytes.size(),
                                                   " bytes, not a multiple of 8"));
  }
  return n;
}

// Shows a long operation in cairn_shard_busy and Shard::busy() while it runs.
class BusyScope {
 public:
  BusyScope(ShardMetrics* metrics, std::atomic<const char*>* busy, const char* operation)
      : metrics_(metrics), busy_(busy), operation_(operation) {
    busy_->store(operation_);
    if (metrics_ != nullptr) metrics_->Busy(operation_, true);
  }
  ~BusyScope() {
    if (metrics_ != nullptr) metrics_->Busy(operation_, false);
    busy_->store(nullptr);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  ShardMetrics* const metrics_;
  std::atomic<const char*>* const busy_;
  const char* const operation_;
};

// InvalidArgument naming the table and what is wrong when the gradients a
// primary buffered (a replica end's PendingGradients) do not fit this
// server's tables: an unknown table id; keys not 8 bytes each or of another
// count than `lengths`; values of another size than the lengths add up to;
// a key out of the table's range or in a partition not held here; a key of
// another replica group than `group`; a length other than the key's row; a
// running sum of a sparse table, or whose first_of does not tag each row
// with workers 0 and 1 only.
absl::Status CheckPendingGradients(const v1::PendingGradients& pg, uint32_t group,
                                   const std::vector<std::unique_ptr<Table>>& tables,
                                   const std::vector<uint32_t>& group_of) {
  const std::string what = absl::StrCat("replica group ", group, ": pending gradients of table ",
                                        pg.table_id(), " (iteration ", pg.iteration(), ", worker ",
                                        pg.worker_id(), ")");
  if (pg.table_id() >= tables.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no such table"));
  }
  const Table& table = *tables[pg.table_id()];
  const size_t n = static_cast<size_t>(pg.lengths_size());
  if (pg.keys().size() != n * sizeof(Key)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", pg.keys().size(),
                                                   " key bytes for ", n, " lengths"));
  }
  uint64_t floats = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string key = pg.keys().substr(i * sizeof(Key), sizeof(Key));
    absl::StatusOr<uint64_t> row = table.CheckKeys(key, 1);
    if (!row.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", row.status().message()));
    }
    if (group_of[table.PartitionOf(KeyAt(key, 0))] != group) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": key ", KeyAt(key, 0), " is not of this replica group"));
    }
    if (*row != pg.lengths(static_cast<int>(i))) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": key ", KeyAt(key, 0), " has ",
                                                     pg.lengths(static_cast<int>(i)),
                                                     " floats, its row ", *row));
    }
    floats += *row;
  }
  if (pg.values().size() != floats * sizeof(float)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", pg.values().size(),
                                                   " value bytes for ", floats, " floats"));
  }
  if (pg.running_sum()) {
    if (table.spec().kind() != v1::TABLE_KIND_DENSE) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": a running sum, which only a dense table keeps"));
    }
    if (pg.first_of().size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a running sum of ", n, " keys with ",
                                                     pg.first_of().size(), " first_of bytes"));
    }
    for (char c : pg.first_of()) {
      const uint8_t bits = static_cast<uint8_t>(c);
      if (bits == 0 || (bits & ~(BspTableSum::kWorker0 | BspTableSum::kWorker1)) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": first_of byte ", bits, " names no worker or one other than 0 and 1"));
      }
    }
  } else if (!pg.first_of().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": first_of without a running sum"));
  }
  return absl::OkStatus();
}

// "[4,2]".
std::string FormatShape(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// The shape a push to `spec` must state: a dense table's own, or
// [num_keys, width] for a sparse one.
std::vector<int64_t> ExpectedShape(const v1::TableSpec& spec, size_t num_keys) {
  if (spec.kind() == v1::TABLE_KIND_SPARSE) return {static_cast<int64_t>(num_keys), spec.width()};
  return {spec.shape().begin(), spec.shape().end()};
}

// A push must say what its bytes are: float32 values of the table's shape
// (field case B18: an equal byte or element count is not enough).
absl::Status CheckShapeAndType(const v1::TableSpec& spec, const v1::TableValues& tv,
                               size_t num_keys) {
  if (!IsWireDtype(tv.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push table=", spec.name(), ": dtype mismatch: expected float32, float16 or bfloat16, got ",
        tv.dtype() == v1::DTYPE_UNSPECIFIED ? std::string("none (TableValues.dtype unset)")
                                            : DTypeName(tv.dtype())));
  }
  const std::vector<int64_t> expected = ExpectedShape(spec, num_keys);
  if (!std::equal(expected.begin(), expected.end(), tv.shape().begin(), tv.shape().end())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push table=", spec.name(), ": shape mismatch: expected ", FormatShape(expected), ", got ",
        tv.shape().empty() ? std::string("none (TableValues.shape unset)")
                           : FormatShape(tv.shape())));
  }
  return absl::OkStatus();
}

}  // namespace

Shard::Shard(uint32_t server_id, const v1::JobSpec& job, ShardMetrics* metrics)
    : server_id_(server_id), job_(job), metrics_(metrics), helper_(ForkJoin::MakeIfUseful()) {
  std::vector<std::string> unbounded;  // sparse tables that grow without bound
  for (const v1::TableSpec& t : job_.tables()) {
    const bool asp = t.consistency() == v1::CONSISTENCY_ASP;
    const int64_t bound = t.consistency() == v1::CONSISTENCY_SSP ? t.staleness() : 0;
    // Sparse rows are updated lazily (field case C10, docs/config.md): only
    // the rows a push carries; a row's momentum or moments do not decay in
    // the iterations it is absent from, and Adam's bias correction counts
    // that row's own updates.
    const bool lazy = t.kind() == v1::TABLE_KIND_SPARSE;
    LOG_INFO("table {}: consistency {}, staleness bound {}, updates {}", t.name(),
             asp ? "asp" : (t.consistency() == v1::CONSISTENCY_SSP ? "ssp" : "bsp"),
             asp ? std::string("none (never waits)") : std::to_string(bound),
             lazy ? "lazy (rows a push carries)" : "every chunk pushed");
    if (metrics_ != nullptr) metrics_->StalenessBound(t.name(), asp ? -1 : bound);
    if (lazy && t.ttl_clocks() > 0) {
      LOG_INFO("table {}: rows not updated for {} clocks are deleted", t.name(), t.ttl_clocks());
    }
    if (lazy && t.capacity_rows() == 0 && t.ttl_clocks() == 0) {
      unbounded.push_back(t.name());
    } else if (lazy && t.capacity_rows() > 0) {
      LOG_INFO("table {}: at most {} rows on this server; beyond, the {} go down to {} of that",
               t.name(), t.capacity_rows(),
               t.eviction() == v1::EVICTION_POLICY_LFU ? "least often updated (LFU)"
                                                        : "least recently updated",
               t.evict_to() > 0 ? t.evict_to() : 0.9);
    }
  }
  if (!unbounded.empty()) {
    // Field case B24: ids that never stop arriving grow such a table until
    // the process runs out of memory. One line for all of them.
    LOG_WARN("{} {}: no capacity_rows: this server keeps a row for every id pushed, without "
             "bound (tables[].capacity_rows sets one, training.embedding.capacity_rows for the "
             "ctr model's tables; ttl_clocks deletes idle rows)",
             unbounded.size() == 1 ? "table" : "tables", absl::StrJoin(unbounded, ", "));
  }
}

Shard::~Shard() { Shutdown(); }

void Shard::Shutdown() {
  std::vector<Waiter> waiters;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    waiters.swap(waiters_);
  }
  for (Waiter& w : waiters) {
    w.done(absl::UnavailableError(absl::StrCat("server ", server_id_, " is shutting down")));
  }
}

uint64_t Shard::map_version() const { return published_version_.load(); }

absl::Status Shard::InstallMap(const v1::PartitionMap& map) {
  if (!map.ready()) return absl::OkStatus();
  if (map.num_partitions() != job_.num_partitions() ||
      map.assignments_size() != static_cast<int>(map.num_partitions())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition map version ", map.version(), " has ", map.assignments_size(),
        " assignments for ", map.num_partitions(), " partitions; the job has ",
        job_.num_partitions()));
  }
  std::vector<Waiter> ready;
  int64_t min_clock;
  {
    absl::MutexLock lock(&mu_);
    if (map.version() <= map_version_) return absl::OkStatus();
    std::map<uint32_t, Group> groups;
    std::vector<bool> mine(map.num_partitions(), false);
    std::vector<uint32_t> group_of(map.num_partitions(), 0);
    std::vector<uint64_t> restore(map.num_partitions(), 0);
    size_t joining = 0;  // partitions whose state comes by transfer
    for (const v1::PartitionAssignment& a : map.assignments()) {
      if (std::find(a.joining().begin(), a.joining().end(), server_id_) != a.joining().end()) {
        ++joining;
      }
      group_of[a.partition()] = a.group();
      if (a.primary() == server_id_) restore[a.partition()] = a.restore_record();
      Group& g = groups[a.group()];
      g.primary = a.primary();
      g.backups.assign(a.backups().begin(), a.backups().end());
      g.joining.assign(a.joining().begin(), a.joining().end());
      mine[a.partition()] = a.primary() == server_id_ ||
                            std::find(a.backups().begin(), a.backups().end(), server_id_) !=
                                a.backups().end() ||
                            std::find(a.joining().begin(), a.joining().end(), server_id_) !=
                                a.joining().end();
    }
    int64_t restored_clock = 0;
    if (!ready_) {
      // Groups restored from a checkpoint (a server registering after its
      // job lost every copy of them) are added once the rest is loaded.
      std::vector<bool> initial = mine;
      for (uint32_t p = 0; p < map.num_partitions(); ++p) initial[p] = mine[p] && restore[p] == 0;
      partitions_.clear();
      for (uint32_t p = 0; p < map.num_partitions(); ++p) {
        if (initial[p]) partitions_.push_back(p);
      }
      std::vector<std::unique_ptr<Table>> tables;
      for (const v1::TableSpec& spec : job_.tables()) {
        ASSIGN_OR_RETURN(std::unique_ptr<Table> t, Table::Create(spec, map.num_partitions(), initial,
                                                                 cold_.get(), helper_.get()));
        tables.push_back(std::move(t));
      }
      tables_ = std::move(tables);
      assignment_version_ = map.version();
      if (loader_) {
        RETURN_IF_ERROR(LoadInitialRowsLocked());
        closed_before_ = start_clock_;
        last_checkpoint_clock_ = start_clock_;
      }
      for (uint32_t p = 0; p < map.num_partitions(); ++p) {
        if (!mine[p] || restore[p] == 0) continue;
        ASSIGN_OR_RETURN(int64_t clock, RestorePartitionLocked(p, restore[p], map.version()));
        restored_clock = std::max(restored_clock, clock);
      }
      LOG_INFO("server {} holds {} of {} partitions (map version {}){}", server_id_,
               partitions_.size(), map.num_partitions(), map.version(),
               joining == 0 ? ""
                            : absl::StrCat("; ", joining, " of them joining: their values come "
                                           "from their groups' primaries"));
    } else if (groups != groups_) {
      // A failover: roles changed. Requests made under older maps are refused
      // from now on (fencing), so a deposed primary's traffic cannot land.
      assignment_version_ = map.version();
      for (uint32_t p = 0; p < map.num_partitions(); ++p) {
        if (mine[p] && !std::binary_search(partitions_.begin(), partitions_.end(), p)) {
          // Joining the partition's group: its state comes by transfer; or
          // the group lost every copy and comes back from a checkpoint.
          if (restore[p] != 0) {
            ASSIGN_OR_RETURN(int64_t clock, RestorePartitionLocked(p, restore[p], map.version()));
            restored_clock = std::max(restored_clock, clock);
          } else {
            for (const std::unique_ptr<Table>& t : tables_) t->AddPartition(p);
            partitions_.insert(std::upper_bound(partitions_.begin(), partitions_.end(), p), p);
          }
        }
      }
      for (const auto& [id, g] : groups) {
        auto old = groups_.find(id);
        if (g.primary == server_id_ && (old == groups_.end() || old->second.primary != server_id_)) {
          LOG_INFO("server {} is now primary of replica group {} (map version {})", server_id_,
                   id, map.version());
        } else if (g.primary != server_id_ && old != groups_.end() &&
                   old->second.primary == server_id_ &&
                   std::find(g.backups.begin(), g.backups.end(), server_id_) != g.backups.end()) {
          LOG_INFO("server {} backs up replica group {} now; server {} is its primary (map "
                   "version {})",
                   server_id_, id, g.primary, map.version());
        }
      }
    }
    if (restored_clock > closed_before_) {
      // The restored values hold the iterations below the record's clock:
      // the boundary moves there with them, so the next checkpoint is
      // recorded at a clock that matches its values (field case C01), not
      // at one a resume would train again from.
      ApplyBelow(restored_clock);
      closed_before_ = restored_clock;
      last_checkpoint_clock_ = std::max(last_checkpoint_clock_, restored_clock);
      LOG_INFO("server {}: iteration boundary at the restored checkpoint's clock {}", server_id_,
               restored_clock);
    }
    groups_ = std::move(groups);
    group_of_ = std::move(group_of);
    UpdateJoinersLocked();
    addresses_.clear();
    for (const v1::Member& m : map.servers()) addresses_[m.id()] = m.address();
    std::vector<ClockTracker::LiveWorker> live;
    for (const v1::Member& w : map.workers()) {
      if (w.state() == v1::MEMBER_STATE_ALIVE) {
        live.push_back({w.id(), w.start_clock(), w.incarnation()});
      }
    }
    clocks_.SetLiveWorkers(live);
    map_version_ = map.version();
    published_version_.store(map_version_);
    ready_ = true;
    Advance(&ready);
    min_clock = ReleasedClock();
  }
  CompleteReady(&ready, min_clock);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Shard::RoutedHere(absl::StatusOr<uint64_t> checked) const {
  // A key of a partition this server does not hold was routed by another map.
  if (absl::IsFailedPrecondition(checked.status())) {
    return WithCurrentMap(checked.status(), published_version_.load());
  }
  return checked;
}

absl::StatusOr<int64_t> Shard::RestorePartitionLocked(uint32_t partition, uint64_t record,
                                                      uint64_t version) {
  if (!restore_loader_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "map version ", version, " restores partition ", partition,
        " from a checkpoint, and this server has no checkpoint directory"));
  }
  int64_t clock = 0;
  for (const std::unique_ptr<Table>& t : tables_) {
    t->AddPartition(partition);
    ASSIGN_OR_RETURN(RestoredRows restored, restore_loader_(record, t->spec(), partition));
    RETURN_IF_ERROR(t->ImportPartition(partition, restored.rows));
    clock = std::max(clock, restored.clock);
  }
  partitions_.insert(std::upper_bound(partitions_.begin(), partitions_.end(), partition),
                     partition);
  LOG_WARN("server {} restored partition {} from checkpoint record {} at clock {} (map version {})",
           server_id_, partition, record, clock, version);
  return clock;
}

absl::Status Shard::CheckVersion(uint64_t version) const {
  if (shutting_down_) {
    return absl::UnavailableError(absl::StrCat("server ", server_id_, " is shutting down"));
  }
  if (!ready_) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_id_, " has no ready partition map yet"));
  }
  if (version < assignment_version_) return MakeStaleMapError(version, map_version_);
  if (const int64_t deadline = lease_deadline_ns_.load();
      absl::ToUnixNanos(MonotonicNow()) >= deadline) {
    return absl::UnavailableError(absl::StrCat(
        "server ", server_id_, " could not renew its lease with the coordinator for ",
        deadline == std::numeric_limits<int64_t>::min()
            ? std::string("good (declared dead)")
            : absl::FormatDuration(MonotonicNow() - absl::FromUnixNanos(deadline)),
        ": not serving until it does"));
  }
  return absl::OkStatus();
}

template <typename Request>
absl::Status Shard::CheckRoute(const Request& request) const {
  if (request.has_server() && request.server() != server_id_) {
    if (!misrouted_noted_.exchange(true)) {
      LOG_WARN("server {} received a request routed to server {}, whose address it now "
               "listens at (a map that still lists server {} sent it): refused as UNAVAILABLE, "
               "the worker retries by a newer map; noted once",
               server_id_, request.server(), request.server());
    }
    return absl::UnavailableError(absl::StrCat(
        "request for server ", request.server(), " reached server ", server_id_,
        ", which now listens at that server's address: not served here"));
  }
  return CheckVersion(request.map_version());
}

absl::Status Shard::CheckGroupRole(const v1::PushRequest& request) const {
  auto it = groups_.find(request.group());
  const bool primary = it != groups_.end() && it->second.primary == server_id_;
  const bool backup = it != groups_.end() &&
                      std::find(it->second.backups.begin(), it->second.backups.end(),
                                server_id_) != it->second.backups.end();
  const bool joining = it != groups_.end() &&
                       std::find(it->second.joining.begin(), it->second.joining.end(),
                                 server_id_) != it->second.joining.end();
  if (request.forwarded() ? (primary || backup || joining) : primary) return absl::OkStatus();
  // Routed by another map than this server's: the sender refreshes and retries.
  return WithCurrentMap(
      absl::FailedPreconditionError(absl::StrCat(
          "server ", server_id_, " does not hold replica group ", request.group(), " as ",
          request.forwarded() ? "a replica" : "primary", " (map version ", map_version_, ")")),
      map_version_);
}

std::vector<Shard::Replica> Shard::ForwardTargets(const v1::PushRequest& request,
                                                  uint64_t* map_version) const {
  absl::MutexLock lock(&mu_);
  *map_version = map_version_;
  std::vector<Replica> out;
  for (uint32_t b : ForwardServersLocked(request)) {
    auto a = addresses_.find(b);
    out.push_back({b, a == addresses_.end() ? std::string() : a->second});
  }
  return out;
}

std::vector<uint32_t> Shard::ForwardServersLocked(const v1::PushRequest& request) const {
  if (request.forwarded()) return {};
  auto it = groups_.find(request.group());
  if (it == groups_.end() || it->second.primary != server_id_) return {};
  std::vector<uint32_t> targets = it->second.backups;
  auto joiners = joiners_.find(request.group());
  if (joiners != joiners_.end()) targets.insert(targets.end(), joiners->second.begin(),
                                                joiners->second.end());
  return targets;
}

bool Shard::AnswersBeforeUpdateLocked(const v1::PushRequest& request) const {
  // A tick or a riding pull is answered after the update it follows; a
  // copy for a backup is sent from the values as applied, and the answer
  // waits for the backups (r > 1: an acknowledged push is never lost).
  return !request.forwarded() && request.end_clock() == 0 && !request.has_pull() &&
         ForwardServersLocked(request).empty();
}

void Shard::SetColdStore(std::unique_ptr<ColdRowStore> cold) {
  absl::MutexLock lock(&mu_);
  cold_ = std::move(cold);
}

void Shard::SetLeaseDeadline(absl::Time deadline) {
  int64_t ns = absl::ToUnixNanos(deadline);
  if (deadline == absl::InfinitePast()) ns = std::numeric_limits<int64_t>::min();
  if (deadline == absl::InfiniteFuture()) ns = std::numeric_limits<int64_t>::max();
  lease_deadline_ns_.store(ns);
}

absl::StatusOr<Table*> Shard::FindTable(uint32_t id, const std::string& name) const {
  if (id >= tables_.size() || (!name.empty() && tables_[id]->spec().name() != name)) {
    for (const auto& t : tables_) {
      if (t->spec().name() == name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "table ", name, " has id ", t->spec().id(), ", request says ", id));
      }
    }
    return absl::NotFoundError(absl::StrCat("unknown table \"", name, "\" (id ", id, ")"));
  }
  return tables_[id].get();
}

absl::StatusOr<bool> Shard::Push(const v1::PushRequest& request,
                                 absl::Span<const ValuePieces> values, bool* ticked,
                                 PullReadBack* read_back, const PushStream* stream,
                                 const std::function<void()>& accepted) {
  const ForkJoin::Working working(helper_.get());  // a core this push takes
  if (ticked != nullptr) *ticked = false;
  if (request.sequence() == 0) {
    return absl::InvalidArgumentError("push: sequence must be >= 1");
  }
  // Validation and gathering need no shard lock: tables are fixed once ready.
  const WindowKey window{request.group(), request.worker_id(), request.incarnation()};
  if (request.forwarded()) {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckPushLocked(request, {}));
    auto receiving = receiving_.find(request.group());
    if (receiving != receiving_.end()) {
      // Joining: held until the group's state is installed, then applied,
      // its values in the copy (they may lie in pieces of the call's).
      v1::PushRequest& held = receiving->second.emplace_back(request);
      for (size_t i = 0; i < values.size() && i < static_cast<size_t>(held.tables_size()); ++i) {
        std::string* bytes = held.mutable_tables(static_cast<int>(i))->mutable_values();
        bytes->resize(PiecesBytes(values[i]));
        CopyPieces(values[i], bytes->data());
        held.mutable_tables(static_cast<int>(i))->clear_shared();
      }
      return false;
    }
    if (AppliedLocked(window, request.sequence())) return true;
  } else {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckPushLocked(request, {}));
    if (AppliedLocked(window, request.sequence())) return true;
  }
  uint64_t bytes = 0;
  if (stream != nullptr && (values.empty() || !Streamable(request, values))) {
    // Only a dense BSP float32 push is applied as it is written: any other
    // is read once every value is.
    RETURN_IF_ERROR(stream->AwaitAll());
    stream = nullptr;
  }
  ASSIGN_OR_RETURN(Grads grads, GatherPush(request, values, &bytes, stream == nullptr));
  bool bsp = false;
  for (const TableGrads& g : grads) bsp |= g.table->spec().consistency() == v1::CONSISTENCY_BSP;

  if (bsp) {
    // Into the iteration buffers (pending_): one push at a time. A push that
    // is its iteration's only gradient and closes it with its tick (one
    // worker, or the others already past the iteration without pushing) is
    // applied and ticked under this one hold of the lock, so nothing (a
    // snapshot, a joiner's transfer, a pull) sees the update without its
    // tick (reported through `ticked`, so the service records it no more).
    std::vector<Waiter> ready;
    int64_t released = 0;
    {
      absl::MutexLock lock(&mu_);
      RETURN_IF_ERROR(CheckPushLocked(request, grads));
      const bool alone = ClosesIterationAloneLocked(request, grads);
      if (stream != nullptr && !(alone && UndoFits(grads))) {
        // Summed or held (not the iteration's only gradient), or too large
        // to put back: checked as it is written, then applied as any push.
        RETURN_IF_ERROR(CheckFiniteGrads(grads, stream));
        stream = nullptr;
      }
      // A streamed push counts as applied only once it all is (a refused
      // one may come again under its sequence).
      if (stream != nullptr ? AppliedLocked(window, request.sequence())
                            : !InsertLocked(window, request.sequence())) {
        return true;
      }
      if (alone) {
        const std::vector<float*> into = ReadBackTargets(grads, read_back);
        if (stream != nullptr) {
          RETURN_IF_ERROR(ApplyStreamedLocked(&grads, into, *stream));
          InsertLocked(window, request.sequence());
        } else {
          for (size_t i = 0; i < grads.size(); ++i) ApplyNow(&grads[i], into[i]);
        }
        clocks_.Tick(request.worker_id(), request.end_clock());
        Advance(&ready);
        released = ReleasedClock();
        if (ticked != nullptr) *ticked = true;
        if (read_back != nullptr) {
          read_back->closed_before = closed_before_;
          read_back->map_version = map_version_;
        }
      } else {
        for (TableGrads& g : grads) ApplyOrHoldLocked(request, &g);
      }
    }
    CompleteReady(&ready, released);
  } else {
    // Applied now (SSP, ASP): under the shared lock, so pushes to different
    // tables, and to different partitions of a dense table, apply on
    // different cores at once (each table locks what it changes). Whatever
    // takes the lock exclusively (a snapshot, a replica transfer, a new map)
    // sees each push whole or not at all.
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckPushLocked(request, grads));
    if (!InsertLocked(window, request.sequence())) return true;
    // Counted before any answer: what a later reader sees includes it.
    pushes_applied_.fetch_add(1, std::memory_order_relaxed);
    if (metrics_ != nullptr) metrics_->PushBytes(bytes);
    // Answered now, when the caller may, and applied after: the worker
    // reads the answer and sends its next request meanwhile. Whatever reads
    // the tables after the answer takes mu_ exclusively first, so it waits
    // for this shared hold, the update included.
    if (accepted && AnswersBeforeUpdateLocked(request)) accepted();
    for (TableGrads& g : grads) ApplyNow(&g);
    return false;
  }
  pushes_applied_.fetch_add(1, std::memory_order_relaxed);
  if (metrics_ != nullptr) metrics_->PushBytes(bytes);
  return false;
}

absl::Status Shard::CheckPushLocked(const v1::PushRequest& request, const Grads& grads) const {
  RETURN_IF_ERROR(CheckRoute(request));
  for (const TableGrads& g : grads) {
    if (g.table->spec().consistency() == v1::CONSISTENCY_BSP && request.clock() < closed_before_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "push table=", g.table->spec().name(), " from worker ", request.worker_id(),
          " for iteration ", request.clock(), ": iterations below ", closed_before_,
          " are already applied"));
    }
  }
  RETURN_IF_ERROR(CheckGroupRole(request));
  return CheckPusherLive(request);
}

bool Shard::AppliedLocked(const WindowKey& window, uint64_t sequence) const {
  absl::MutexLock lock(&windows_mu_);
  auto it = applied_.find(window);
  return it != applied_.end() && it->second.Contains(sequence);
}

bool Shard::InsertLocked(const WindowKey& window, uint64_t sequence) {
  absl::MutexLock lock(&windows_mu_);
  return applied_[window].Insert(sequence);
}

absl::Status Shard::CheckPusherLive(const v1::PushRequest& request) const {
  if (request.forwarded()) return absl::OkStatus();
  return CheckWorkerLocked("push", request.worker_id(), request.incarnation(),
                           request.map_version());
}

absl::Status Shard::CheckWorkerLocked(absl::string_view what, uint32_t worker,
                                      uint64_t incarnation, uint64_t version) const {
  if (incarnation == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " from worker ", worker, " names no incarnation (RegisterWorkerResponse.incarnation "
        "must be carried on every push and clock)"));
  }
  const uint64_t known = clocks_.IncarnationOf(worker);
  if (known == 0) return absl::OkStatus();  // a joiner this server's map does not list yet
  if (incarnation < known) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " from worker ", worker, " incarnation ", incarnation,
        " refused: the worker registered again since (incarnation ", known,
        "); a replaced process must not update the model"));
  }
  const bool dropped = incarnation == known && clocks_.Dropped(worker);
  if (incarnation == known && !dropped) return absl::OkStatus();
  if (version > map_version_) {
    // The worker registered (again) in a map this server has not installed
    // yet: worth a retry once it has.
    return absl::UnavailableError(absl::StrCat(
        what, " from worker ", worker, " incarnation ", incarnation, ": server ", server_id_,
        "'s partition map (version ", map_version_, ", incarnation ", known,
        ") is older than the request's (version ", version, ")"));
  }
  if (!dropped) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " from worker ", worker, " incarnation ", incarnation,
        " refused: partition map version ", map_version_, " lists incarnation ", known));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      what, " from worker ", worker, " refused: partition map version ", map_version_,
      " no longer lists the worker (the coordinator declared it dead, or it left); a worker "
      "declared dead must not update the model"));
}

bool Shard::Streamable(const v1::PushRequest& request,
                       absl::Span<const ValuePieces> values) const {
  if (values.size() != static_cast<size_t>(request.tables_size())) return false;
  for (int i = 0; i < request.tables_size(); ++i) {
    const v1::TableValues& tv = request.tables(i);
    absl::StatusOr<Table*> table = FindTable(tv.table_id(), tv.table());
    if (!table.ok() || (*table)->spec().kind() != v1::TABLE_KIND_DENSE ||
        (*table)->spec().consistency() != v1::CONSISTENCY_BSP ||
        tv.dtype() != v1::DTYPE_FLOAT32 || tv.keys().size() % sizeof(Key) != 0 ||
        !KeysAscending(tv.keys(), tv.keys().size() / sizeof(Key)) || values[i].size() != 1 ||
        reinterpret_cast<uintptr_t>(values[i].front().data()) % alignof(float) != 0) {
      return false;
    }
  }
  return true;
}

bool Shard::UndoFits(const Grads& grads) {
  uint64_t undo = 0;
  for (const TableGrads& g : grads) {
    if (g.direct == nullptr || !g.ascending || g.is_widened ||
        g.table->spec().kind() != v1::TABLE_KIND_DENSE) {
      return false;
    }
    undo += static_cast<const DenseTable*>(g.table)->UndoBytes(g.values().size());
  }
  return undo <= kMaxStreamUndoBytes;
}

absl::Status Shard::CheckFiniteGrads(const Grads& grads, const PushStream* stream) const {
  for (size_t k = 0; k < grads.size(); ++k) {
    // A stream's run is written from its end: the last table first.
    const TableGrads& g = grads[stream != nullptr ? grads.size() - 1 - k : k];
    if (g.direct == nullptr) continue;  // gathered: checked by GatherPush
    const v1::TableSpec& spec = g.table->spec();
    const std::string& keys = g.direct->keys();
    const absl::string_view values = g.values();
    const uint64_t per_key = static_cast<uint64_t>(spec.chunk_size());
    absl::Status finite;
    if (stream == nullptr) {
      finite = CheckFinite(spec, keys, values, per_key, helper_.get());
    }
    // Piece by piece from the end, each once written.
    for (size_t end = values.size(); stream != nullptr && end > 0 && finite.ok();) {
      const size_t begin = end > kStreamCheckBytes ? end - kStreamCheckBytes : 0;
      finite = stream->Await(values.data() + begin);
      if (finite.ok()) {
        finite = CheckFinite(spec, keys, values.substr(begin, end - begin), per_key,
                             helper_.get(), begin / sizeof(float));
      }
      end = begin;
    }
    if (!finite.ok()) {
      if (metrics_ != nullptr && absl::IsInvalidArgument(finite)) metrics_->NonFinite(spec.name());
      return finite;
    }
  }
  return absl::OkStatus();
}

absl::Status Shard::ApplyStreamedLocked(Grads* grads, const std::vector<float*>& into,
                                        const PushStream& stream) {
  // The last table first: the count grows from the run's end.
  for (size_t i = grads->size(); i-- > 0;) {
    TableGrads& g = (*grads)[i];
    const absl::Status status = static_cast<DenseTable*>(g.table)->ApplyStreamedAndRead(
        g.direct->keys(), g.n, g.values(), into[i], stream, &stream_undo_);
    if (status.ok()) continue;
    stream_undo_.Restore();
    if (metrics_ != nullptr && absl::IsInvalidArgument(status)) {
      metrics_->NonFinite(g.table->spec().name());
    }
    return status;
  }
  stream_undo_.Clear();
  return absl::OkStatus();
}

absl::StatusOr<Shard::Grads> Shard::GatherPush(const v1::PushRequest& request,
                                               absl::Span<const ValuePieces> values_of,
                                               uint64_t* bytes, bool check_finite) const {
  if (!values_of.empty() && values_of.size() != static_cast<size_t>(request.tables_size())) {
    return absl::InternalError(absl::StrCat("push: ", values_of.size(), " value ranges for ",
                                            request.tables_size(), " tables"));
  }
  Grads grads;
  grads.reserve(request.tables_size());
  for (int i = 0; i < request.tables_size(); ++i) {
    const v1::TableValues& tv = request.tables(i);
    const ValuePieces own = values_of.empty() ? OnePiece(tv.values()) : ValuePieces();
    const ValuePieces& pieces = values_of.empty() ? own : values_of[i];
    const uint64_t raw_bytes = PiecesBytes(pieces);
    ASSIGN_OR_RETURN(Table * table, FindTable(tv.table_id(), tv.table()));
    const std::string& name = table->spec().name();
    ASSIGN_OR_RETURN(size_t n, CountKeys(tv.keys(), name));
    RETURN_IF_ERROR(CheckShapeAndType(table->spec(), tv, n));
    ASSIGN_OR_RETURN(uint64_t floats, RoutedHere(table->CheckKeys(tv.keys(), n)));
    const size_t value_bytes = WireBytes(tv.dtype());
    if (raw_bytes != floats * value_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "push table=", name, ": ", n, " keys need ", floats, " ", DTypeName(tv.dtype()),
          " values (", floats * value_bytes, " bytes), got ", raw_bytes, " bytes"));
    }
    const bool sparse = table->spec().kind() == v1::TABLE_KIND_SPARSE;
    const bool bsp = table->spec().consistency() == v1::CONSISTENCY_BSP;
    const bool ascending = KeysAscending(tv.keys(), n);
    if (pieces.size() > 1 && sparse && !bsp && tv.dtype() == v1::DTYPE_FLOAT32 && check_finite) {
      // Rows as gRPC received them: checked in place, then applied row by
      // row from there (ApplyNow), never joined.
      if (absl::Status finite = CheckFinite(table->spec(), tv.keys(), pieces,
                                            static_cast<uint64_t>(table->spec().width()));
          !finite.ok()) {
        if (metrics_ != nullptr) metrics_->NonFinite(name);
        return finite;
      }
      *bytes += raw_bytes + tv.keys().size();
      TableGrads& g = grads.emplace_back();
      g.table = table;
      g.direct = &tv;
      g.ascending = ascending;
      g.n = n;
      g.pieces = &pieces;
      continue;
    }
    // 16-bit values are widened first: checked, summed and applied as
    // float32 (C09). Float32 values in a worker's shared region may start
    // at any even offset (after a 16-bit table's values), and those
    // received in several pieces any: copied, aligned and joined, as
    // ServeInto does for a pull's answer.
    const absl::string_view raw =
        pieces.size() == 1 ? absl::string_view(pieces.front().data(), pieces.front().size())
                           : absl::string_view();
    std::unique_ptr<char[]> widened;
    absl::string_view values = raw;
    bool copied = false;
    if (tv.dtype() != v1::DTYPE_FLOAT32 || pieces.size() > 1) {
      widened = std::make_unique_for_overwrite<char[]>(floats * sizeof(float));
      DecodeValues(pieces, tv.dtype(), reinterpret_cast<float*>(widened.get()));
      values = absl::string_view(widened.get(), floats * sizeof(float));
      copied = true;
    } else if (reinterpret_cast<uintptr_t>(raw.data()) % alignof(float) != 0) {
      widened = std::make_unique_for_overwrite<char[]>(raw.size());
      if (!raw.empty()) std::memcpy(widened.get(), raw.data(), raw.size());
      values = absl::string_view(widened.get(), raw.size());
      copied = true;
    }
    const uint64_t per_key = static_cast<uint64_t>(sparse ? table->spec().width()
                                                           : table->spec().chunk_size());
    absl::Status finite = check_finite ? CheckFinite(table->spec(), tv.keys(), values, per_key,
                                                     helper_.get())
                                       : absl::OkStatus();
    if (!finite.ok()) {
      if (metrics_ != nullptr) metrics_->NonFinite(name);
      return finite;
    }
    *bytes += raw_bytes + tv.keys().size();
    TableGrads& g = grads.emplace_back();
    g.table = table;
    if (ascending || (!bsp && sparse)) {
      // Applied, or summed into its iteration's buffer (BSP), from where
      // the values are, which outlives the push; a sparse table finds
      // repeated keys itself (ApplyNow).
      g.direct = &tv;
      g.ascending = ascending;
      g.n = n;
      g.is_widened = copied;
      if (!g.is_widened) g.direct_values = values;
      g.widened = std::move(widened);
      g.widened_bytes = copied ? values.size() : 0;
    } else {
      table->Gather(tv.keys(), n, values, &g.buffer);
    }
  }
  return grads;
}

int64_t Shard::RequiredClock(const v1::PullRequest& request) const {
  int64_t required = kNoWait;
  for (const v1::TableKeys& tk : request.tables()) {
    if (tk.table_id() >= tables_.size()) continue;
    const v1::TableSpec& spec = tables_[tk.table_id()]->spec();
    if (spec.consistency() == v1::CONSISTENCY_ASP) continue;
    const int64_t s = spec.consistency() == v1::CONSISTENCY_SSP ? spec.staleness() : 0;
    required = std::max(required, request.clock() - s);
  }
  return required;
}

Shard::ReplyLayout Shard::LayOut(const v1::PullRequest& pull) const {
  ReplyLayout layout;
  layout.floats.resize(pull.tables_size());
  layout.offsets.resize(pull.tables_size());
  for (int i = 0; i < pull.tables_size(); ++i) {
    const v1::TableKeys& tk = pull.tables(i);
    layout.floats[i] =
        tables_[tk.table_id()]->ValueFloats(tk.keys(), tk.keys().size() / sizeof(Key));
    layout.offsets[i] = layout.total;
    layout.total += layout.floats[i] * WireBytes(WireDtypeOrFloat32(tk.dtype()));
  }
  return layout;
}

std::vector<float*> Shard::ReadBackTargets(const Grads& grads, PullReadBack* read_back) const {
  std::vector<float*> into(grads.size(), nullptr);
  if (read_back == nullptr || read_back->pull == nullptr) return into;
  const v1::PullRequest& pull = *read_back->pull;
  read_back->written.assign(pull.tables_size(), false);
  // Only a pull of exactly the push's tables and keys (a step's pull of
  // the model it pushed): those keys passed the push's checks, the pull's
  // own are checked only when it is served.
  std::vector<size_t> source(pull.tables_size());
  for (int i = 0; i < pull.tables_size(); ++i) {
    const v1::TableKeys& tk = pull.tables(i);
    auto same = std::find_if(grads.begin(), grads.end(), [&](const TableGrads& g) {
      return g.direct != nullptr && g.ascending && g.table->spec().id() == tk.table_id() &&
             g.direct->keys() == tk.keys();
    });
    if (same == grads.end()) return into;
    source[i] = static_cast<size_t>(same - grads.begin());
  }
  const ReplyLayout layout = LayOut(pull);
  if (layout.total > read_back->room.size()) return into;
  for (int i = 0; i < pull.tables_size(); ++i) {
    char* at = read_back->room.data() + layout.offsets[i];
    if (into[source[i]] != nullptr ||
        WireDtypeOrFloat32(pull.tables(i).dtype()) != v1::DTYPE_FLOAT32 ||
        reinterpret_cast<uintptr_t>(at) % alignof(float) != 0) {
      continue;  // read when the pull is served
    }
    into[source[i]] = reinterpret_cast<float*>(at);
    read_back->written[i] = true;
  }
  return into;
}

bool Shard::ServeInto(const v1::PullRequest& request, v1::PullResponse* response,
                      const PullReplyArea& area) const {
  // Pull checked the keys on arrival.
  const ReplyLayout layout = LayOut(request);
  const std::vector<uint64_t>& floats = layout.floats;
  const uint64_t total = layout.total;
  const absl::Span<char> room = area.allocate ? area.allocate(total) : area.bytes;
  if (total > room.size()) return false;
  const std::vector<bool>* written =
      area.read_back != nullptr && !area.allocate && room.data() == area.read_back->room.data()
          ? &area.read_back->written
          : nullptr;
  char* out = room.data();
  std::vector<float> wide;
  for (int i = 0; i < request.tables_size(); ++i) {
    const v1::TableKeys& tk = request.tables(i);
    const Table* table = tables_[tk.table_id()].get();
    const size_t n = tk.keys().size() / sizeof(Key);
    v1::TableValues* tv = response->add_tables();
    tv->set_table_id(tk.table_id());
    tv->set_table(table->spec().name());
    for (int64_t d : ExpectedShape(table->spec(), n)) tv->add_shape(d);
    const v1::DType dtype = WireDtypeOrFloat32(tk.dtype());
    tv->set_dtype(dtype);
    const uint64_t bytes = floats[i] * WireBytes(dtype);
    if (written != nullptr && static_cast<size_t>(i) < written->size() && (*written)[i]) {
      // Written by the push this pull rode on, as its update went.
    } else if (dtype == v1::DTYPE_FLOAT32 &&
               reinterpret_cast<uintptr_t>(out) % alignof(float) == 0) {
      table->ReadTo(tk.keys(), n, reinterpret_cast<float*>(out));
    } else {
      wide.resize(floats[i]);
      table->ReadTo(tk.keys(), n, wide.data());
      EncodeValues(wide.data(), floats[i], dtype, out);
    }
    v1::SharedRange* range = tv->mutable_shared();
    range->set_region(area.region);
    range->set_offset(area.offset + static_cast<uint64_t>(out - room.data()));
    range->set_length(bytes);
    out += bytes;
  }
  return true;
}

void Shard::Serve(const v1::PullRequest& request, v1::PullResponse* response,
                  int64_t min_clock, const PullReplyArea& area) const {
  const ForkJoin::Working working(helper_.get());  // a core this answer takes
  if ((!area.bytes.empty() || area.allocate) && ServeInto(request, response, area)) {
    response->set_min_clock(min_clock == ClockTracker::kNoWorkers ? -1 : min_clock);
    return;
  }
  for (const v1::TableKeys& tk : request.tables()) {
    Table* table = tables_[tk.table_id()].get();
    v1::TableValues* out = response->add_tables();
    out->set_table_id(tk.table_id());
    out->set_table(table->spec().name());
    size_t n = tk.keys().size() / sizeof(Key);
    for (int64_t d : ExpectedShape(table->spec(), n)) out->add_shape(d);
    const v1::DType dtype = WireDtypeOrFloat32(tk.dtype());
    out->set_dtype(dtype);
    if (dtype == v1::DTYPE_FLOAT32) {
      table->Read(tk.keys(), n, out->mutable_values());
      continue;
    }
    std::string floats;
    table->Read(tk.keys(), n, &floats);
    const size_t count = floats.size() / sizeof(float);
    out->mutable_values()->resize(count * WireBytes(dtype));
    EncodeValues(reinterpret_cast<const float*>(floats.data()), count, dtype,
                 out->mutable_values()->data());
  }
  response->set_min_clock(min_clock == ClockTracker::kNoWorkers ? -1 : min_clock);
}

void Shard::Pull(const v1::PullRequest* request, v1::PullResponse* response,
                 absl::Time deadline, std::function<void(absl::Status)> done,
                 PullReplyArea area) {
  absl::Status version;
  {
    // Exclusive: a push answered before its update (Push's `accepted`)
    // holds mu_ shared until the update is done, and this pull must read it.
    absl::MutexLock lock(&mu_);
    version = CheckRoute(*request);
  }
  if (!version.ok()) {
    done(version);
    return;
  }
  for (const v1::TableKeys& tk : request->tables()) {
    absl::StatusOr<Table*> table = FindTable(tk.table_id(), tk.table());
    absl::Status status = table.status();
    if (status.ok() && !IsWireDtype(WireDtypeOrFloat32(tk.dtype()))) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "table=", tk.table(), ": values cannot travel as ", DTypeName(tk.dtype()),
          " (float32, float16 or bfloat16)"));
    }
    if (status.ok()) {
      absl::StatusOr<size_t> n = CountKeys(tk.keys(), tk.table());
      status = n.status();
      if (status.ok()) status = RoutedHere((*table)->CheckKeys(tk.keys(), *n)).status();
    }
    if (!status.ok()) {
      done(Annotate(status, "pull"));
      return;
    }
  }
  int64_t min_clock = 0;
  std::vector<Waiter> ready;
  bool wait = false;
  {
    absl::MutexLock lock(&mu_);
    // Checked again: shut down since the first check, nobody would answer
    // a parked pull.
    version = CheckRoute(*request);
    const bool same_worker =
        clocks_.IsLive(request->worker_id()) &&
        request->incarnation() == clocks_.IncarnationOf(request->worker_id());
    if (version.ok() && request->after_tick() && !same_worker) {
      // A pull sent ahead of the worker's tick waits for that tick, which
      // this server would not take as this worker's: refused, it is sent
      // again, as a plain pull once the tick is sent.
      version = absl::UnavailableError(absl::StrCat(
          "pull of clock ", request->clock(), " sent ahead of its tick by worker ",
          request->worker_id(), " incarnation ", request->incarnation(), ": server ", server_id_,
          " does not list that worker as live (incarnation ",
          clocks_.IncarnationOf(request->worker_id()), ")"));
    }
    if (version.ok()) {
      // A pull for iteration t says the worker completed t iterations: it
      // carries the worker's clock tick (docs/design.md, Consistency), which may
      // release other workers' pulls. A pull sent ahead of that tick
      // (after_tick) carries none: it waits for the tick instead.
      if (same_worker && !request->after_tick() &&
          request->clock() > clocks_.ClockOf(request->worker_id())) {
        clocks_.Tick(request->worker_id(), request->clock());
        Advance(&ready);
      }
      const int64_t required = RequiredClock(*request);
      const int64_t own_required = request->after_tick() ? request->clock() : 0;
      min_clock = ReleasedClock();
      // Values a push wrote for this pull (PullReadBack) stand only while
      // nothing has closed or changed maps since, and only if it is served
      // now: a pull that waits is answered after later iterations close.
      if (area.read_back != nullptr && (area.read_back->closed_before != closed_before_ ||
                                        area.read_back->map_version != map_version_)) {
        area.read_back = nullptr;
      }
      if (MustWait(request->worker_id(), required, own_required, min_clock)) {
        area.read_back = nullptr;
        waiters_.push_back(Waiter{request, response, required, deadline, std::move(done), area,
                                  own_required});
        wait = true;
      } else {
        ++pulls_served_;
      }
    }
  }
  if (!version.ok()) {
    done(version);
    return;
  }
  CompleteReady(&ready, min_clock);
  if (wait) return;
  Serve(*request, response, min_clock, area);
  done(absl::OkStatus());
}

absl::StatusOr<int64_t> Shard::Clock(const v1::ClockRequest& request) {
  std::vector<Waiter> ready;
  int64_t min_clock;
  {
    // Exclusive, also so that a push answered before its update (Push's
    // `accepted`) is applied before this tick releases any pull.
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckRoute(request));
    // A leave of the current incarnation is accepted again (a retried
    // Finish); any other request must come from a live incarnation.
    if (!request.leaving() || request.incarnation() != clocks_.IncarnationOf(request.worker_id())) {
      RETURN_IF_ERROR(CheckWorkerLocked("clock", request.worker_id(), request.incarnation(),
                                        request.map_version()));
    }
    if (request.leaving()) {
      clocks_.Leave(request.worker_id());
      LOG_INFO("worker {} left at clock {}", request.worker_id(), request.clock());
    } else if (!clocks_.Tick(request.worker_id(), request.clock())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "clock from worker ", request.worker_id(),
          ", which is not a live member of the job (left, dead or unknown)"));
    }
    Advance(&ready);
    min_clock = ReleasedClock();
  }
  CompleteReady(&ready, min_clock);
  return min_clock == ClockTracker::kNoWorkers ? -1 : min_clock;
}

void Shard::ApplyBelow(int64_t clock) {
  while (!pending_.empty() && pending_.begin()->first < clock) {
    IterationBuffer& iteration = pending_.begin()->second;
    for (auto& [table_id, sum] : iteration) {
      Table* table = tables_[table_id].get();
      float scale = 1.0f;
      GradBuffer* grads =
          sum.Close(table->spec().aggregation() != v1::AGGREGATION_SUM, &scale);
      if (grads != nullptr && !grads->empty()) table->ApplyScaled(*grads, scale);
      sum.Recycle();
    }
    pending_.erase(pending_.begin());
  }
}

BspTableSum& Shard::PendingLocked(int64_t iteration, const Table& table) {
  IterationBuffer& by_table = pending_[iteration];
  const uint32_t id = table.spec().id();
  auto it = by_table.find(id);
  if (it != by_table.end()) return it->second;
  const bool dense = table.spec().kind() == v1::TABLE_KIND_DENSE;
  return by_table
      .try_emplace(id, /*fold_first_two=*/dense, &spare_[id], dense ? table.NumKeys() : 0,
                   dense ? table.NumValueBytes() / sizeof(float) : 0)
      .first->second;
}

int64_t Shard::ReleasedClock() const {
  const int64_t min_clock = clocks_.MinClock();
  return hold_.active ? std::min(min_clock, closed_before_) : min_clock;
}

bool Shard::MustWait(uint32_t worker, int64_t required, int64_t own_required,
                     int64_t released) const {
  if (required != kNoWait && released < required) return true;
  return own_required > 0 && clocks_.IsLive(worker) && clocks_.ClockOf(worker) < own_required;
}

void Shard::Advance(std::vector<Waiter>* ready) {
  const int64_t min_clock = clocks_.MinClock();
  if (min_clock == ClockTracker::kNoWorkers) {
    // Every worker left: what they pushed is final.
    if (!hold_.active) ApplyBelow(std::numeric_limits<int64_t>::max());
  } else {
    int64_t limit = std::max(closed_before_, min_clock);
    if (hold_.active) limit = std::min(limit, std::max(hold_.limit, closed_before_));
    // Close iterations up to `limit`, stopping exactly at each checkpoint
    // boundary on the way so its snapshot is the cut at that clock.
    while (closed_before_ < limit) {
      int64_t next = limit;
      if (every_clocks_ > 0) {
        const int64_t multiple = (limit / every_clocks_) * every_clocks_;
        if (multiple > closed_before_) next = multiple;
      }
      if (hold_.active && hold_.committed && hold_.limit > closed_before_) {
        next = std::min(next, hold_.limit);
      }
      ApplyBelow(next);
      closed_before_ = next;
      for (const auto& table : tables_) table->AdvanceClock(next);  // time-to-live
      const bool periodic = every_clocks_ > 0 && next % every_clocks_ == 0;
      const bool committed = hold_.active && hold_.committed && next == hold_.limit;
      if (periodic || committed) TakeCheckpointLocked();
      if (committed) hold_ = Hold{};
    }
  }
  // With no live worker (before the first, or once the last has left at
  // the job's end) the gauges keep their last values: a scrape as the job
  // ends shows where it ended, not 0.
  if (metrics_ != nullptr && min_clock != ClockTracker::kNoWorkers) {
    metrics_->Clocks(min_clock, clocks_.MaxClock());
  }
  const int64_t released = ReleasedClock();
  std::vector<Waiter> waiting;
  const size_t before = ready->size();
  for (Waiter& w : waiters_) {
    if (MustWait(w.request->worker_id(), w.required, w.own_required, released)) {
      waiting.push_back(std::move(w));
    } else {
      ready->push_back(std::move(w));
    }
  }
  waiters_.swap(waiting);
  pulls_served_ += ready->size() - before;
}

void Shard::CompleteReady(std::vector<Waiter>* ready, int64_t min_clock) {
  for (Waiter& w : *ready) {
    Serve(*w.request, w.response, min_clock, w.area);
    w.done(absl::OkStatus());
  }
  ready->clear();
}

void Shard::ExpireWaiters(absl::Time now) {
  std::vector<std::pair<Waiter, std::string>> expired;
  std::vector<Waiter> ready;
  int64_t released = 0;
  {
    absl::MutexLock lock(&mu_);
    if (hold_.active && hold_.until <= now) {
      LOG_WARN("checkpoint request {} held server {} at clock {} past its time: letting go",
               hold_.request_id, server_id_, hold_.limit);
      hold_ = Hold{};
      Advance(&ready);
      released = ReleasedClock();
    }
  }
  CompleteReady(&ready, released);
  {
    absl::MutexLock lock(&mu_);
    auto it = std::partition(waiters_.begin(), waiters_.end(),
                             [&](const Waiter& w) { return w.deadline > now; });
    for (auto w = it; w != waiters_.end(); ++w) {
      std::vector<std::string> names;
      for (const v1::TableKeys& tk : w->request->tables()) names.push_back(tk.table());
      const int64_t slowest = clocks_.SlowestWorker();
      const uint32_t worker = w->request->worker_id();
      std::string why =
          w->own_required > 0 && clocks_.IsLive(worker) &&
                  clocks_.ClockOf(worker) < w->own_required
              ? absl::StrCat("pull table=", absl::StrJoin(names, ","), " at clock ",
                             w->request->clock(), " from worker ", worker,
                             " sent ahead of its tick: waited for that worker's clock >= ",
                             w->own_required, "; it is at clock ", clocks_.ClockOf(worker))
              : absl::StrCat("pull table=", absl::StrJoin(names, ","), " at clock ",
                             w->request->clock(), " from worker ", worker,
                             ": waited for min clock >= ", w->required, "; slowest worker ",
                             slowest, " is at clock ",
                             slowest < 0 ? 0 : clocks_.ClockOf(static_cast<uint32_t>(slowest)));
      expired.emplace_back(std::move(*w), std::move(why));
    }
    waiters_.erase(it, waiters_.end());
  }
  for (auto& [w, why] : expired) w.done(absl::DeadlineExceededError(why));
}

void Shard::Stats(v1::StatsResponse* response, bool primary_keys) const {
  if (const char* operation = busy()) {
    response->set_server_id(server_id_);
    response->set_map_version(published_version_.load());
    response->set_busy(operation);
    return;
  }
  // The partitions this server is primary of, counted after the lock.
  std::vector<bool> primary;
  bool ready = false;
  {
    absl::MutexLock lock(&mu_);  // after any push answered before its update
    ready = ready_;
    primary.assign(group_of_.size(), false);
    for (uint32_t p = 0; p < group_of_.size(); ++p) {
      auto g = groups_.find(group_of_[p]);
      primary[p] = g != groups_.end() && g->second.primary == server_id_;
    }
    StatsLocked(response);
  }
  // tables_ is fixed once ready_ was seen under mu_.
  if (!primary_keys || !ready) return;
  for (size_t i = 0; i < tables_.size(); ++i) {
    const Table::KeyCount count = tables_[i]->CountKeys(primary);
    response->mutable_tables(static_cast<int>(i))->set_primary_keys(count.keys);
    response->mutable_tables(static_cast<int>(i))->set_primary_bytes(count.value_bytes);
  }
}

void Shard::StatsLocked(v1::StatsResponse* response) const {
  response->set_server_id(server_id_);
  response->set_map_version(map_version_);
  for (uint32_t p : partitions_) response->add_partitions(p);
  for (const auto& t : tables_) {
    v1::TableStats* s = response->add_tables();
    s->set_table(t->spec().name());
    s->set_num_keys(t->NumKeys());
    s->set_num_partitions(partitions_.size());
    const int64_t min_clock = clocks_.MinClock();
    s->set_min_clock(min_clock == ClockTracker::kNoWorkers ? -1 : min_clock);
    s->set_max_clock(clocks_.MaxClock());
    s->set_bytes(t->NumValueBytes());
    if (const auto* sparse = dynamic_cast<const SparseTable*>(t.get()); sparse != nullptr) {
      s->set_pending_ids(sparse->NumPending());
      s->set_not_admitted_pushes(sparse->NotAdmittedPushes());
      s->set_evicted_rows(sparse->EvictedRows());
      s->set_dropped_pending_ids(sparse->DroppedPending());
      s->set_cold_rows(sparse->ColdRows());
      s->set_expired_rows(sparse->ExpiredRows());
      s->set_admitted_rows(sparse->AdmittedRows());
      s->set_spilled_rows(sparse->SpilledRows());
    }
  }
  response->set_pushes_applied(pushes_applied_.load(std::memory_order_relaxed));
  response->set_pulls_served(pulls_served_);
}

absl::StatusOr<ShardSnapshot> Shard::Snapshot() const {
  absl::MutexLock lock(&mu_);
  if (!ready_) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_id_, " has no ready partition map yet"));
  }
  return SnapshotLocked();
}

absl::StatusOr<ShardSnapshot> Shard::SnapshotLocked() const {
  const BusyScope busy(metrics_, &busy_, "snapshot");
  CAIRN_KILLPOINT("shard.snapshot");  // the copy below takes as long as the shard's bytes
  ShardSnapshot snap;
  snap.closed_before = closed_before_;
  snap.min_clock = clocks_.MinClock();
  for (uint32_t w : clocks_.LiveIds()) snap.worker_clocks[w] = clocks_.ClockOf(w);
  {
    absl::MutexLock windows(&windows_mu_);
    for (const auto& [key, window] : applied_) {
      // Keys ascend by incarnation: a worker's newest one is written last.
      if (std::get<0>(key) == server_id_) snap.sequence_floors[std::get<1>(key)] = window.floor();
    }
  }
  // Each partition is checkpointed once, by its primary.
  std::vector<uint32_t> held;
  std::set<uint32_t> primary_groups;
  for (const auto& [id, g] : groups_) {
    if (g.primary == server_id_) primary_groups.insert(id);
  }
  for (uint32_t p : partitions_) {
    if (primary_groups.contains(group_of_[p])) held.push_back(p);
  }
  std::sort(held.begin(), held.end());
  for (const std::unique_ptr<Table>& t : tables_) {
    for (uint32_t p : held) {
      ASSIGN_OR_RETURN(PartitionRows rows, t->ExportPartition(p));
      snap.partitions.push_back({t->spec().id(), p, std::move(rows)});
    }
  }
  return snap;
}

absl::Status Shard::RestorePartition(uint32_t table_id, uint32_t partition,
                                     const PartitionRows& rows) {
  absl::MutexLock lock(&mu_);
  if (!ready_) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_id_, " has no ready partition map yet"));
  }
  if (const uint64_t applied = pushes_applied_.load(std::memory_order_relaxed); applied > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", server_id_, ": restore must come before any push (", applied,
        " applied)"));
  }
  if (table_id >= tables_.size()) {
    return absl::NotFoundError(absl::StrCat("restore: unknown table id ", table_id));
  }
  return tables_[table_id]->ImportPartition(partition, rows);
}

void Shard::SetCheckpointSink(int64_t every_clocks, SnapshotSink sink) {
  every_clocks_ = every_clocks;
  sink_ = std::move(sink);
}

void Shard::SetInitialRows(InitialRowsLoader loader, int64_t start_clock) {
  loader_ = std::move(loader);
  start_clock_ = start_clock;
}

absl::Status Shard::LoadInitialRowsLocked() {
  const BusyScope busy(metrics_, &busy_, "load");
  CAIRN_KILLPOINT("shard.load");  // reading a resumed shard takes as long as its bytes
  std::vector<uint32_t> held = partitions_;
  std::sort(held.begin(), held.end());
  for (const std::unique_ptr<Table>& t : tables_) {
    for (uint32_t p : held) {
      ASSIGN_OR_RETURN(PartitionRows rows, loader_(t->spec(), p, t->SlotsPerElement()));
      RETURN_IF_ERROR(Annotate(t->ImportPartition(p, rows),
                               absl::StrCat("load table ", t->spec().name(), " partition ", p)));
    }
  }
  LOG_INFO("server {} loaded {} partitions of {} tables; starting at clock {}", server_id_,
           held.size(), tables_.size(), start_clock_);
  return absl::OkStatus();
}

void Shard::TakeCheckpointLocked() {
  if (!sink_ || closed_before_ <= last_checkpoint_clock_) return;
  absl::StatusOr<ShardSnapshot> snap = SnapshotLocked();
  if (!snap.ok()) {
    LOG_ERROR("checkpoint at clock {}: {}", closed_before_, snap.status().message());
    return;
  }
  last_checkpoint_clock_ = closed_before_;
  sink_(*std::move(snap));
}

absl::StatusOr<int64_t> Shard::PrepareCheckpoint(uint64_t request_id, absl::Time hold_until) {
  absl::MutexLock lock(&mu_);
  if (!ready_) {
    return absl::UnavailableError(
        absl::StrCat("server ", server_id_, " has no ready partition map yet"));
  }
  if (hold_.active && hold_.request_id != request_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", server_id_, " is held for checkpoint request ", hold_.request_id));
  }
  hold_ = Hold{true, request_id, closed_before_, false, hold_until};
  return closed_before_;
}

absl::Status Shard::CommitCheckpoint(uint64_t request_id, int64_t clock) {
  std::vector<Waiter> ready;
  int64_t released;
  {
    absl::MutexLock lock(&mu_);
    if (!hold_.active || hold_.request_id != request_id) {
      return absl::FailedPreconditionError(
          absl::StrCat("server ", server_id_, ": checkpoint request ", request_id,
                       " does not hold this server (expired or aborted)"));
    }
    if (clock < closed_before_) {
      hold_ = Hold{};
      return absl::FailedPreconditionError(absl::StrCat(
          "server ", server_id_, " is past clock ", clock, " (at ", closed_before_, ")"));
    }
    hold_.limit = clock;
    hold_.committed = true;
    if (closed_before_ == clock) {
      TakeCheckpointLocked();
      hold_ = Hold{};
    }
    Advance(&ready);
    released = ReleasedClock();
  }
  CompleteReady(&ready, released);
  return absl::OkStatus();
}

void Shard::AbortCheckpoint(uint64_t request_id) {
  std::vector<Waiter> ready;
  int64_t released;
  {
    absl::MutexLock lock(&mu_);
    if (!hold_.active || hold_.request_id != request_id) return;
    hold_ = Hold{};
    Advance(&ready);
    released = ReleasedClock();
  }
  CompleteReady(&ready, released);
}

// --- State transfer ---------------------------------------------------------

void Shard::SetJoinerSink(JoinerSink sink) { joiner_sink_ = std::move(sink); }

void Shard::UpdateJoinersLocked() {
  // Primary: announce new joiners once; forget ones the map dropped.
  for (auto it = announced_.begin(); it != announced_.end();) {
    auto g = groups_.find(it->first);
    const bool still = g != groups_.end() && g->second.primary == server_id_ &&
                       std::find(g->second.joining.begin(), g->second.joining.end(),
                                 it->second) != g->second.joining.end();
    const bool backup = g != groups_.end() &&
                        std::find(g->second.backups.begin(), g->second.backups.end(),
                                  it->second) != g->second.backups.end();
    if (!still) {
      // Dead, or a backup now (forwarded to as one): no longer a joiner.
      (void)backup;
      joiners_[it->first].erase(it->second);
      it = announced_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [id, g] : groups_) {
    if (g.primary == server_id_) {
      for (uint32_t j : g.joining) {
        if (announced_.emplace(id, j).second && joiner_sink_) joiner_sink_(id, j);
      }
    }
    // Joiner: hold forwarded pushes of a group until its state arrives.
    const bool joining = std::find(g.joining.begin(), g.joining.end(), server_id_) !=
                         g.joining.end();
    if (joining && !installed_.contains(id)) receiving_.try_emplace(id);
  }
}

std::string Shard::AddressOf(uint32_t server) const {
  absl::MutexLock lock(&mu_);
  auto it = addresses_.find(server);
  return it == addresses_.end() ? std::string() : it->second;
}

void Shard::DropJoiner(uint32_t group, uint32_t joiner) {
  absl::MutexLock lock(&mu_);
  joiners_[group].erase(joiner);  // still announced: the sender retries, no second task
}

absl::StatusOr<std::vector<v1::ReplicaChunk>> Shard::ExportGroup(uint32_t group, uint32_t joiner) {
  absl::MutexLock lock(&mu_);
  auto g = groups_.find(group);
  if (!ready_ || g == groups_.end() || g->second.primary != server_id_ ||
      std::find(g->second.joining.begin(), g->second.joining.end(), joiner) ==
          g->second.joining.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", server_id_, ": no transfer of replica group ", group, " to server ", joiner,
        " under map version ", map_version_));
  }
  std::vector<v1::ReplicaChunk> chunks;
  const uint64_t version = map_version_;  // the lambda below runs under mu_ too
  auto chunk = [&] {
    v1::ReplicaChunk c;
    c.set_map_version(version);
    c.set_group(group);
    return c;
  };
  for (const std::unique_ptr<Table>& t : tables_) {
    for (uint32_t p : partitions_) {
      if (group_of_[p] != group) continue;
      ASSIGN_OR_RETURN(PartitionRows rows, t->ExportPartition(p));
      v1::ReplicaChunk c = chunk();
      c.mutable_rows()->set_table_id(t->spec().id());
      c.mutable_rows()->set_partition(p);
      c.mutable_rows()->set_rows(checkpoint::EncodeRows(rows));
      chunks.push_back(std::move(c));
    }
  }
  v1::ReplicaChunk end = chunk();
  v1::ReplicaEnd* e = end.mutable_end();
  e->set_closed_before(closed_before_);
  {
    absl::MutexLock windows(&windows_mu_);
    for (const auto& [key, window] : applied_) {
      if (std::get<0>(key) != group) continue;
      v1::PushWindow* w = e->add_windows();
      w->set_worker_id(std::get<1>(key));
      w->set_incarnation(std::get<2>(key));
      w->set_floor(window.floor());
      for (uint64_t s : window.held()) w->add_held(s);
    }
  }
  for (const auto& [iteration, by_table] : pending_) {
    for (const auto& [table_id, sum] : by_table) {
      const Table& table = *tables_[table_id];
      // The group's rows of each buffer as one PendingGradients: the running
      // sum's (each row tagged with its first gradients), then each
      // worker's waiting rows.
      struct Source {
        const GradBuffer* buffer;
        uint32_t worker;
        bool running_sum;
      };
      std::vector<Source> sources = {{&sum.running_sum(), 0, true}};
      for (const auto& [worker, buffer] : sum.waiting()) sources.push_back({&buffer, worker, false});
      for (const auto& [buffer_ptr, worker, running_sum] : sources) {
        const GradBuffer& buffer = *buffer_ptr;
        v1::PendingGradients* pg = nullptr;
        for (size_t i = 0; i < buffer.rows().size(); ++i) {
          const GradBuffer::Row& row = buffer.rows()[i];
          if (group_of_[table.PartitionOf(row.key)] != group) continue;
          if (pg == nullptr) {
            pg = e->add_pending();
            pg->set_iteration(iteration);
            pg->set_table_id(table_id);
            pg->set_worker_id(worker);
            pg->set_running_sum(running_sum);
          }
          pg->mutable_keys()->append(reinterpret_cast<const char*>(&row.key), sizeof(Key));
          pg->add_lengths(row.length);
          pg->mutable_values()->append(reinterpret_cast<const char*>(buffer.RowData(row)),
                                       row.length * sizeof(float));
          if (running_sum) pg->mutable_first_of()->push_back(static_cast<char>(sum.FirstOf(i)));
        }
      }
    }
  }
  chunks.push_back(std::move(end));
  joiners_[group].insert(joiner);  // from now on its pushes reach the joiner too
  return chunks;
}

absl::StatusOr<bool> Shard::ReceiveReplica(const v1::ReplicaChunk& chunk) {
  size_t replayed = 0;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_ || !ready_) {
      return absl::UnavailableError(absl::StrCat("server ", server_id_, " is not serving"));
    }
    auto receiving = receiving_.find(chunk.group());
    auto group = groups_.find(chunk.group());
    if (receiving == receiving_.end() && installed_.contains(chunk.group()) &&
        group != groups_.end() && group->second.primary == chunk.primary()) {
      // A resent transfer whose first end went through (its answer was lost).
      return absl::AlreadyExistsError(absl::StrCat("server ", server_id_, " holds replica group ",
                                                   chunk.group(), " already"));
    }
    // The map's own check: only the group's current primary sends its state
    // (other groups' changes since do not matter).
    if (receiving == receiving_.end() || group == groups_.end() ||
        group->second.primary != chunk.primary()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "server ", server_id_, " is not joining replica group ", chunk.group(),
          " from server ", chunk.primary(), " (map version ", map_version_, ")"));
    }
    Incoming& incoming = incoming_[chunk.group()];
    if (incoming.transfer_id != chunk.transfer_id()) incoming = Incoming{chunk.transfer_id(), {}};
    if (chunk.has_rows()) {
      const v1::ReplicaRows& r = chunk.rows();
      if (r.table_id() >= tables_.size()) {
        return absl::InvalidArgumentError(absl::StrCat("replica rows of unknown table id ",
                                                       r.table_id()));
      }
      ASSIGN_OR_RETURN(PartitionRows rows,
                       checkpoint::DecodeRows(r.rows(), absl::StrCat("replica of table ",
                                                                     r.table_id(), " partition ",
                                                                     r.partition())));
      incoming.rows.push_back({r.table_id(), {r.partition(), std::move(rows)}});
      return false;
    }
    const v1::ReplicaEnd& e = chunk.end();
    // Checked before anything changes: the sizes and keys index the tables.
    for (const v1::PendingGradients& pg : e.pending()) {
      RETURN_IF_ERROR(CheckPendingGradients(pg, chunk.group(), tables_, group_of_));
    }
    for (const auto& [table_id, part] : incoming.rows) {
      RETURN_IF_ERROR(tables_[table_id]->ImportPartition(part.first, part.second));
    }
    incoming_.erase(chunk.group());
    {
      absl::MutexLock windows(&windows_mu_);
      for (const v1::PushWindow& w : e.windows()) {
        applied_[{chunk.group(), w.worker_id(), w.incarnation()}] = SequenceWindow::FromParts(
            w.floor(), std::vector<uint64_t>(w.held().begin(), w.held().end()));
      }
    }
    for (const v1::PendingGradients& pg : e.pending()) {
      BspTableSum& sum = PendingLocked(pg.iteration(), *tables_[pg.table_id()]);
      const float* values = reinterpret_cast<const float*>(pg.values().data());
      uint64_t offset = 0;
      for (int i = 0; i < pg.lengths_size(); ++i) {
        const Key key = KeyAt(pg.keys(), static_cast<size_t>(i));
        if (pg.running_sum()) {
          sum.AddToRunningSum(key, values + offset, pg.lengths(i),
                              static_cast<uint8_t>(pg.first_of()[static_cast<size_t>(i)]));
        } else {
          sum.AddWaiting(pg.worker_id(), key, values + offset, pg.lengths(i));
        }
        offset += pg.lengths(i);
      }
    }
    // The joiner's own boundary may lag the primary's (clock ticks in
    // flight) or lead it (its other groups' iterations closed meanwhile).
    if (e.closed_before() > closed_before_) closed_before_ = e.closed_before();
    // The pushes forwarded while the transfer ran were accepted when they
    // arrived (map version, role): they go in now whatever map this server
    // holds since, and under BSP into their iterations' buffers before any of
    // those iterations is applied, so the sums keep their order.
    for (const v1::PushRequest& r : receiving->second) {
      if (absl::Status s = ApplyHeldPushLocked(r); !s.ok()) {
        LOG_ERROR("replica group {}: a push forwarded during the transfer is malformed: {}",
                  chunk.group(), s.message());
      }
    }
    replayed = receiving->second.size();
    ApplyBelow(closed_before_);
    receiving_.erase(receiving);
    installed_.insert(chunk.group());
  }
  LOG_INFO("server {} holds replica group {} (boundary {}, {} pushes replayed)", server_id_,
           chunk.group(), chunk.end().closed_before(), replayed);
  return true;
}

void Shard::ApplyNow(TableGrads* grads, float* read_back) {
  if (grads->pieces != nullptr) {  // a sparse table's rows, SSP or ASP
    auto* table = static_cast<SparseTable*>(grads->table);
    const std::string& keys = grads->direct->keys();
    PieceRows rows(*grads->pieces, static_cast<size_t>(table->spec().width()),
                   SparseTable::kUpdateBatch);
    if (grads->ascending) {
      table->ApplyUnique(keys, grads->n, &rows);
    } else if (!table->ApplyIfDistinct(keys, grads->n, &rows)) {
      table->Gather(keys, grads->n, &rows, &grads->buffer);  // a key repeats (B07)
      table->Apply(grads->buffer);
    }
    return;
  }
  if (grads->direct != nullptr) {
    const std::string& keys = grads->direct->keys();
    if (grads->ascending && read_back != nullptr) {
      grads->table->ApplyUniqueAndRead(keys, grads->n, grads->values(), read_back);
    } else if (grads->ascending) {
      grads->table->ApplyUnique(keys, grads->n, grads->values());
    } else if (!grads->table->ApplyIfDistinct(keys, grads->n, grads->values())) {
      // A key repeats: summed first (B07).
      grads->table->Gather(keys, grads->n, grads->values(), &grads->buffer);
      grads->table->Apply(grads->buffer);
    }
  } else if (!grads->buffer.empty()) {
    grads->table->Apply(grads->buffer);
  }
}

bool Shard::ClosesIterationAloneLocked(const v1::PushRequest& request,
                                       const Grads& grads) const {
  const int64_t iteration = request.clock();
  if (request.forwarded() || request.end_clock() != iteration + 1) return false;
  if (hold_.active || closed_before_ != iteration || !pending_.empty()) return false;
  for (const TableGrads& g : grads) {
    const v1::TableSpec& spec = g.table->spec();
    if (spec.kind() != v1::TABLE_KIND_DENSE || spec.consistency() != v1::CONSISTENCY_BSP) {
      return false;
    }
  }
  auto group = groups_.find(request.group());
  if (group == groups_.end() || !group->second.backups.empty() ||
      !group->second.joining.empty()) {
    return false;
  }
  if (auto joiners = joiners_.find(request.group());
      joiners != joiners_.end() && !joiners->second.empty()) {
    return false;
  }
  return clocks_.LastAt(request.worker_id(), iteration);
}

void Shard::ApplyOrHoldLocked(const v1::PushRequest& request, TableGrads* grads) {
  Table* table = grads->table;
  if (table->spec().consistency() != v1::CONSISTENCY_BSP) {
    ApplyNow(grads);
    return;
  }
  // A push with no rows adds no worker: the mean divides by the workers
  // that pushed something.
  if (grads->direct != nullptr) {
    if (grads->n == 0) return;
    PendingLocked(request.clock(), *table)
        .AddRows(request.worker_id(), grads->direct->keys(), grads->n,
                 reinterpret_cast<const float*>(grads->values().data()),
                 [table](Key k) { return table->RowLength(k); }, helper_.get());
    return;
  }
  if (grads->buffer.empty()) return;
  PendingLocked(request.clock(), *table).AddAll(request.worker_id(), std::move(grads->buffer));
}

absl::Status Shard::ApplyHeldPushLocked(const v1::PushRequest& request) {
  uint64_t bytes = 0;
  ASSIGN_OR_RETURN(Grads grads, GatherPush(request, {}, &bytes));
  if (!InsertLocked({request.group(), request.worker_id(), request.incarnation()},
                    request.sequence())) {
    return absl::OkStatus();  // in the copy already
  }
  for (TableGrads& g : grads) ApplyOrHoldLocked(request, &g);
  pushes_applied_.fetch_add(1, std::memory_order_relaxed);
  if (metrics_ != nullptr) metrics_->PushBytes(bytes);
  return absl::OkStatus();
}

}  // namespace cairn
