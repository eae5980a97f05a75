// cairn-server's domain: the tables it holds, push application (buffered per
// iteration under BSP, on arrival under SSP/ASP), consistency-gated pulls and
// clock ticks. RPC handlers (rpc/parameter_service.h) only convert messages.
//
// BSP (docs/design.md, Consistency): pushes of iteration t are buffered per worker;
// when every live worker has completed iteration t (min clock > t), the
// buffered gradients are summed in worker-id order, scaled by 1/(workers that
// pushed) for `aggregation: mean`, and applied once, so N workers with batch b
// equal one worker with batch N*b and runs repeat bit for bit.
// SSP/ASP: each push is applied when it arrives.
//
// Every request is fully validated before anything changes: a rejected
// request leaves every stored value as it was.
//
// Thread-safe.
#ifndef CAIRN_SERVER_SHARD_SHARD_H_
#define CAIRN_SERVER_SHARD_SHARD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"
#include "cairn/v1/shard.pb.h"
#include "common/value_pieces.h"
#include "server/shard/bsp_table_sum.h"
#include "server/shard/clock_tracker.h"
#include "server/shard/dense_table.h"
#include "server/shard/grad_buffer.h"
#include "server/checkpoint/partition_rows.h"
#include "server/shard/sequence_window.h"
#include "server/shard/table.h"

namespace cairn {

class ColdRowStore;

class ShardMetrics;

// What a checkpoint takes from one server (Shard::Snapshot).
struct ShardSnapshot {
  struct Partition {
    uint32_t table_id = 0;
    uint32_t partition = 0;
    PartitionRows rows;
  };
  // BSP: iterations below this are applied (later ones, still buffered, are
  // not in `partitions`). SSP/ASP apply pushes on arrival: the state is the
  // one at the moment of the snapshot.
  int64_t closed_before = 0;
  int64_t min_clock = 0;                            // over live workers
  std::map<uint32_t, int64_t> worker_clocks;        // live workers
  std::map<uint32_t, uint64_t> sequence_floors;     // sequences below were applied
  std::vector<Partition> partitions;                // table-major, ascending
};

// Receives each checkpoint snapshot, on the thread that closed the
// iteration, with the shard lock held: it must only hand the snapshot on
// (server/shard/checkpoint_agent.h queues it for writing).
using SnapshotSink = std::function<void(ShardSnapshot)>;

// Initial rows of (table, partition) for a job that starts from saved state
// (a checkpoint or a .safetensors file); `slots_per_element` is the table's.
using InitialRowsLoader = std::function<absl::StatusOr<PartitionRows>(
    const v1::TableSpec& table, uint32_t partition, int slots_per_element)>;

// Rows of (table, partition) in complete checkpoint record `record_id`, for
// a replica group restored onto this server while the job runs
// (PartitionAssignment.restore_record), with the record's clock: the rows
// hold every update of the iterations below it. Called under the shard lock.
struct RestoredRows {
  PartitionRows rows;
  int64_t clock = 0;
};
using RestoreLoader = std::function<absl::StatusOr<RestoredRows>(
    uint64_t record_id, const v1::TableSpec& table, uint32_t partition)>;

// Told (under the shard lock: it must only queue) that `server` joins replica
// group `group`, of which this server is primary, and needs its state.
using JoinerSink = std::function<void(uint32_t group, uint32_t server)>;

struct PullReadBack;

// Where a pull's answer may go instead of each TableValues.values: the
// range of the worker's shared region its request reserved (reply_to), or
// a buffer the caller allocates once the answer's size is known (the gRPC
// reply's slice, rpc/pull_reply.h). When every value of the answer fits,
// Serve writes them there and names each table's part in
// TableValues.shared; otherwise they go inline.
struct PullReplyArea {
  absl::Span<char> bytes;  // empty (and no `allocate`): inline
  uint64_t region = 0;     // SharedRange.region
  uint64_t offset = 0;     // SharedRange.offset of bytes.data()
  // When set, `bytes` is ignored: called once, with the answer's value
  // bytes, on the thread that serves the pull; its span must stay valid
  // until the pull's `done` has run.
  std::function<absl::Span<char>(uint64_t bytes)> allocate;
  // When set (with `bytes`), the values of the tables it marks are already
  // in `bytes`, written by the push this pull rode on (PullReadBack): Pull
  // keeps it only when the pull is served at once and nothing closed or
  // changed maps since, else reads every table as usual. Valid until the
  // pull's `done` has run.
  const PullReadBack* read_back = nullptr;
};

// The pull riding on a push (PushRequest.pull) answered as the push is
// applied: when the push is a lone worker's and closes its iteration
// (Shard::ClosesIterationAloneLocked), each dense table the pull asks for
// with the push's own keys is written into the pull's reply area chunk by
// chunk as the update leaves it, while those values are still in the
// cache, instead of read again from the table once the whole update is
// done (docs/benchmarks.md, "The answer written as the update goes").
struct PullReadBack {
  const v1::PullRequest* pull = nullptr;  // the riding pull
  absl::Span<char> room;                  // its reply area (PullReplyArea::bytes)
  // Set by Push: which of the pull's tables were written, and the shard's
  // closed clock and map version right after.
  std::vector<bool> written;
  int64_t closed_before = -1;
  uint64_t map_version = 0;
};

class Shard {
 public:
  // `metrics` may be null; it must outlive the shard.
  Shard(uint32_t server_id, const v1::JobSpec& job, ShardMetrics* metrics);
  ~Shard();

  // Checkpoints (docs/design.md, Checkpoints). Call before the first ready map.
  // Every time the iteration boundary reaches a multiple of `every_clocks`
  // (0: never) and at each committed two-phase checkpoint, the shard closes
  // iterations exactly up to that clock, copies its partitions, worker clocks
  // and sequence floors (a consistent cut under BSP; under SSP/ASP, pushes
  // apply on arrival, so the copy is this server's state at that moment) and
  // hands the copy to `sink`. Not thread-safe against the other calls.
  void SetCheckpointSink(int64_t every_clocks, SnapshotSink sink);

  // Makes the first ready map fill every held partition from `loader` and
  // start the iteration boundary at `start_clock` (the resumed checkpoint's
  // clock; 0 for a file of initial values). Call before the first ready map.
  void SetInitialRows(InitialRowsLoader loader, int64_t start_clock);

  // Two-phase checkpoint, driven by the coordinator (shard.proto,
  // CheckpointPhase). Prepare holds the shard at its current boundary until
  // Commit, Abort or `hold_until`, and returns the boundary. Errors:
  // Unavailable (not ready), FailedPrecondition (another checkpoint holds).
  absl::StatusOr<int64_t> PrepareCheckpoint(uint64_t request_id, absl::Time hold_until)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Snapshots at boundary `clock` (>= the prepared one) once every live
  // worker passed it, then lets go. FailedPrecondition when `request_id` does
  // not hold (expired, aborted) or the boundary is already past `clock`.
  absl::Status CommitCheckpoint(uint64_t request_id, int64_t clock) ABSL_LOCKS_EXCLUDED(mu_);
  // Lets go of a prepared checkpoint; no-op for another or no request.
  void AbortCheckpoint(uint64_t request_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Installs partition map `map`. The first ready map creates the tables for
  // the partitions this server holds (as primary or as backup of their
  // replica group); later maps update the live worker set, the version and
  // the roles (a backup promoted to primary after a failover: requests under
  // older maps are refused from then on; a group this server joins gets its
  // partitions added, filled by the transfer from the group's primary).
  // InvalidArgument when the map does not fit the job.
  absl::Status InstallMap(const v1::PartitionMap& map) ABSL_LOCKS_EXCLUDED(mu_);

  // Validates and applies (SSP/ASP) or buffers (BSP) a push. Returns true when
  // (worker_id, group, sequence) was applied before (nothing done now).
  // A worker's push must come to the primary of its group, a forwarded one
  // to a replica of it. A worker's own push is fenced by its membership: once
  // this server's map stopped listing a worker it had listed (the coordinator
  // declared it dead; a zombie woken from a pause) or the worker left, its
  // pushes are refused, so a dead worker's late update never lands (the
  // primary decides for its backups: forwarded pushes are not checked).
  // Errors: Unavailable (no ready map yet; this server's lease ran out; the
  // push names a newer map than this server's, which lists its worker no
  // longer), FailedPrecondition (stale map version, with the current one;
  // group or key not held in that role; iteration already closed; the worker
  // was declared dead or left), NotFound (table), InvalidArgument (lengths,
  // key range, non-finite values).
  //
  // `values`, when not empty, holds one entry per table of the request: that
  // table's value bytes in place of its TableValues.values, valid until
  // Push returns, at any alignment: a range of the worker's shared region
  // (the same-host path, docs/shared-memory.md), or the pieces gRPC
  // received them in (common/received_tables.h). A sparse float32 table
  // under SSP or ASP is read from those pieces row by row; other values in
  // several pieces are first copied into one aligned buffer (16-bit ones
  // widened as they are copied).
  //
  // `ticked` (may be null) is set when the push was its BSP iteration's
  // only gradient and its end_clock was recorded with it
  // (ClosesIterationAloneLocked): the caller records that tick no more.
  //
  // `read_back` (may be null): the pull riding on the push and its reply
  // area; with `ticked`, the tables it marks `written` hold their new
  // values there (pass it to Pull in the area of that pull).
  //
  // `stream` (may be null): the push's values are still being written
  // (PushRequest.written; `values` lie in the stream's run). A dense BSP
  // float32 push that closes its iteration alone, whose chunks' values,
  // slots and steps fit kMaxStreamUndoBytes, is checked and applied chunk by
  // chunk, the run's last first, as the stream counts them written
  // (push_stream.h), each chunk saved first, and put
  // back whole when a value is not finite (InvalidArgument, as above) or
  // the stream stalls (DeadlineExceeded, PushStream::Await); its sequence
  // counts as applied only once it all is. Any other dense BSP float32 push
  // is checked as it is written, then goes as without; any other push
  // waits for all its values first (DeadlineExceeded as well).
  //
  // `accepted` (may be empty): the caller's answer to a push it may
  // acknowledge before the update (its values the caller's own until Push
  // returns, not a worker's region). Called once, on this thread, for an
  // SSP or ASP push with no tick (end_clock 0), no riding pull and no copy
  // to forward (a group without backups or joiners), once it is checked and
  // recorded in its sequence window and before its update; Push then
  // applies it and returns false as usual. The push holds mu_ shared from
  // before the call to the end of its update, and whatever reads the
  // tables after an answer takes mu_ exclusively first (Pull, Clock, whose
  // tick may release other workers' pulls, Stats, a snapshot, a transfer,
  // a new map): each starts once the update is done. Not called for any
  // other push, nor for one refused or a duplicate.
  absl::StatusOr<bool> Push(const v1::PushRequest& request,
                            absl::Span<const ValuePieces> values = {},
                            bool* ticked = nullptr, PullReadBack* read_back = nullptr,
                            const PushStream* stream = nullptr,
                            const std::function<void()>& accepted = {}) ABSL_LOCKS_EXCLUDED(mu_);
  // The most a streamed push keeps to put back (Push's `stream`): a push
  // that would need more is applied once written.
  static constexpr uint64_t kMaxStreamUndoBytes = uint64_t{8} << 20;



  // Validates a pull and calls `done` once the consistency bound allows
  // (maybe at once, on this thread; maybe later, on the thread that ticks the
  // clock), with `response` filled, or with DeadlineExceeded at `deadline`
  // (monotonic clock: MonotonicNow; ExpireWaiters is given that clock)
  // naming the table, the clock waited for and the slowest worker. `request`
  // and `response` must stay valid until `done` runs.
  // `area` (may be empty) must stay valid until `done` runs too.
  void Pull(const v1::PullRequest* request, v1::PullResponse* response, absl::Time deadline,
            std::function<void(absl::Status)> done, PullReplyArea area = {})
      ABSL_LOCKS_EXCLUDED(mu_);

  // Records a worker's clock (and, with `leaving`, its exit); closes BSP
  // iterations and releases pulls it unblocks. Returns the min clock.
  absl::StatusOr<int64_t> Clock(const v1::ClockRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

  // Fills `response`. While a long operation holds the shard (busy()), it
  // answers at once with server_id, map_version and `busy` only. With
  // `primary_keys`, each table's primary_keys and primary_bytes too
  // (Table::CountKeys: a pass over every row of a sparse table, taken after
  // the shard's lock is released, under the table's reader lock); the
  // metrics refresh, every 2 s, asks without.
  void Stats(v1::StatsResponse* response, bool primary_keys = true) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // The long operation holding the shard now ("snapshot", "load"), or null.
  // Never waits for the shard lock.
  const char* busy() const { return busy_.load(); }

  // Fails every waiting pull with Unavailable and refuses new requests, so
  // the gRPC server can stop without waiting for parked pulls.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Fails waiting pulls whose deadline passed and lets go of a checkpoint
  // hold past its time (`now` and both deadlines on the monotonic clock).
  // Called periodically.
  void ExpireWaiters(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // The installed map's version; never waits for the shard lock.
  uint64_t map_version() const;

  // A backup a push must reach before the worker is acknowledged.
  struct Replica {
    uint32_t server_id = 0;
    std::string address;
  };
  // The backups of `request`'s group when this server is its primary and the
  // push came from a worker; empty otherwise. `map_version` receives the
  // version to stamp the forwarded copies with.
  std::vector<Replica> ForwardTargets(const v1::PushRequest& request, uint64_t* map_version) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Where groups restored onto this server come from. Call before the first
  // ready map.
  void SetRestoreLoader(RestoreLoader loader) { restore_loader_ = std::move(loader); }

  // --- State transfer to a joining backup (shard.proto, ReplicaChunk) ---
  // Primary side. Call before the first ready map.
  void SetJoinerSink(JoinerSink sink);
  // Copies the group's partitions, its push windows and its BSP gradients
  // not yet applied, under the shard lock, and from that moment forwards
  // the group's pushes to `joiner` as to a backup (so every push is in the
  // copy, forwarded, or both: the joiner's windows drop the repeats).
  // FailedPrecondition when this server is not the group's primary or the
  // map no longer lists `joiner` as joining.
  absl::StatusOr<std::vector<v1::ReplicaChunk>> ExportGroup(uint32_t group, uint32_t joiner)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stops forwarding to a joiner whose transfer failed on the way (it may be
  // unreachable; the next ExportGroup starts forwarding again). The pair
  // stays announced, so the sender's own retry is the only one.
  void DropJoiner(uint32_t group, uint32_t joiner) ABSL_LOCKS_EXCLUDED(mu_);
  // The address of `server` in the current map ("" when unknown).
  std::string AddressOf(uint32_t server) const ABSL_LOCKS_EXCLUDED(mu_);

  // Joiner side: applies one chunk. Rows go into the (empty) partitions; the
  // end installs windows and gradients, moves the boundary up to the
  // primary's, applies what is already closed, then the pushes forwarded
  // meanwhile, and makes the group live here. Returns true at the end.
  // FailedPrecondition when this server is not joining the group; the
  // errors of Table::ImportPartition; AlreadyExists when this server
  // installed the group already (a resent transfer: the sender takes it as
  // done).
  absl::StatusOr<bool> ReceiveReplica(const v1::ReplicaChunk& chunk) ABSL_LOCKS_EXCLUDED(mu_);

  // Fencing (docs/design.md, Failure and recovery): from `deadline` (on the
  // monotonic clock, common/time_source.h MonotonicNow) on, every request is
  // refused with Unavailable until a later deadline is set. The server sets
  // it from each renewed lease, shorter than the coordinator's own timeout,
  // so it stops acknowledging before a backup can be promoted. Never waits
  // for the shard lock: a long snapshot or restore holds it, and the lease
  // must be renewed meanwhile.
  void SetLeaseDeadline(absl::Time deadline);

  // The cold tier for tables with cold_tier (cold_rows.h), owned from now
  // on. Call before the first map is installed; tables made without one
  // refuse cold_tier.
  void SetColdStore(std::unique_ptr<ColdRowStore> cold) ABSL_LOCKS_EXCLUDED(mu_);

  // Copies every partition held here of every table, with the worker clocks
  // and push sequence floors, under the shard lock: no push or iteration is
  // applied meanwhile, so the copy is one consistent state. Unavailable
  // before the first ready map.
  absl::StatusOr<ShardSnapshot> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Loads a checkpointed partition (written by any server, under any number
  // of servers) into table `table_id`'s partition held here, before any push
  // is applied. Errors: Unavailable (no ready map yet), FailedPrecondition
  // (pushes already applied; partition not held here), NotFound (table),
  // InvalidArgument (rows that do not fit the table; see Table::ImportPartition).
  absl::Status RestorePartition(uint32_t table_id, uint32_t partition, const PartitionRows& rows)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter {
    const v1::PullRequest* request;
    v1::PullResponse* response;
    int64_t required;  // min clock needed
    absl::Time deadline;
    std::function<void(absl::Status)> done;
    PullReplyArea area;
    // PullRequest.after_tick: the worker's own clock needed here as well
    // (its tick of the iteration before); 0: none.
    int64_t own_required = 0;
  };
  // Buffered BSP gradients of one iteration, per table id (bsp_table_sum.h).
  using IterationBuffer = std::map<uint32_t, BspTableSum>;

  // One table's part of a push. Summed per key into `buffer`; or left in
  // the request (`direct`, its `n` keys) when the table applies pushes at
  // once (SSP, ASP) and the keys are strictly ascending or the table is
  // sparse, applied from there without a copy; or when the table is BSP and the keys are
  // strictly ascending, summed from there into the worker's iteration
  // buffer (the same sums, bit for bit, as gathering first).
  struct TableGrads {
    Table* table = nullptr;
    GradBuffer buffer;
    // Set when applied straight from the request (SSP and ASP: a dense
    // table's ascending chunks; a sparse table's rows, gathered into
    // `buffer` when applied only if a key repeats): its keys, and its
    // float32 values (the request's, a shared region's, or `widened`).
    const v1::TableValues* direct = nullptr;
    bool ascending = false;           // direct keys strictly ascending: ApplyUnique
    absl::string_view direct_values;  // unless widened or in pieces
    // A sparse table's float32 rows left in the several pieces they were
    // received in (SSP and ASP): read row by row (PieceRows), never as
    // values().
    const ValuePieces* pieces = nullptr;
    // Float32 values of a 16-bit push, or copied aligned: widened_bytes
    // bytes, written whole before they are read (not zeroed first).
    std::unique_ptr<char[]> widened;
    size_t widened_bytes = 0;
    bool is_widened = false;
    size_t n = 0;
    absl::string_view values() const {
      return is_widened ? absl::string_view(widened.get(), widened_bytes) : direct_values;
    }
  };
  using Grads = std::vector<TableGrads>;
  // (group, worker, incarnation) of a push's sequence window (applied_).
  using WindowKey = std::tuple<uint32_t, uint32_t, uint64_t>;

  absl::Status CheckVersion(uint64_t version) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A worker's request (PullRequest, PushRequest, ClockRequest) checked
  // before anything else: the server it names, when it names one, is this
  // one, and then CheckVersion of its map version. UNAVAILABLE naming both
  // servers when it names another (the kernel gave that server's port to
  // this process; the worker retries by a newer map).
  template <typename Request>
  absl::Status CheckRoute(const Request& request) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Everything a push must pass under the lock: map version, iteration not
  // closed (BSP tables of `grads`), group role, pusher live.
  absl::Status CheckPushLocked(const v1::PushRequest& request, const Grads& grads) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The servers a worker's push to `request`'s group is forwarded to (its
  // backups and joiners) when this server is the group's primary; empty
  // for a forwarded copy or a group held in another role.
  std::vector<uint32_t> ForwardServersLocked(const v1::PushRequest& request) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether `request` may be answered before its update (Push's
  // `accepted`): no tick, no riding pull, nothing to forward.
  bool AnswersBeforeUpdateLocked(const v1::PushRequest& request) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether `sequence` of `window` was applied; records it (false: it was).
  bool AppliedLocked(const WindowKey& window, uint64_t sequence) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(windows_mu_);
  bool InsertLocked(const WindowKey& window, uint64_t sequence)
      ABSL_SHARED_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(windows_mu_);
  // Applies a table's part of a push now (tables lock what they change);
  // with `read_back`, a dense table's ascending chunks also leave their
  // new values there, one after the other (Table::ApplyUnique).
  static void ApplyNow(TableGrads* grads, float* read_back = nullptr);
  // Checks a push's tables, keys, lengths and values and gathers its
  // gradients (tables are fixed once ready: no shard lock needed); adds the
  // payload size to `*bytes`. Errors: those Push() names for its contents.
  // `values` as for Push.
  // Without `check_finite` the values are not read (a streamed push's are
  // checked as they are applied).
  absl::StatusOr<Grads> GatherPush(const v1::PushRequest& request,
                                   absl::Span<const ValuePieces> values,
                                   uint64_t* bytes, bool check_finite = true) const;
  // Whether a streamed push of `request` may be applied as it is written:
  // every table dense BSP, float32 values aligned in one piece of
  // `values`, keys ascending. Reads no value.
  bool Streamable(const v1::PushRequest& request,
                  absl::Span<const ValuePieces> values) const;
  // Whether every table of `grads` is applied from the request's own
  // values and what a streamed apply saves fits kMaxStreamUndoBytes.
  static bool UndoFits(const Grads& grads);
  // CheckFinite on each table applied from the request's values. With
  // `stream` (the values lie in its run), each piece of kStreamCheckBytes
  // once the stream counts it written, the run's last first: what the
  // worker wrote before it sent the push is checked while it writes the
  // rest. Errors: InvalidArgument naming the first value found not finite;
  // DeadlineExceeded as PushStream::Await.
  absl::Status CheckFiniteGrads(const Grads& grads, const PushStream* stream = nullptr) const;
  static constexpr size_t kStreamCheckBytes = size_t{1} << 20;
  // DenseTable::ApplyStreamedAndRead on every table of `grads`, the last
  // first (the run is written from its end), the answers into `into`; on
  // an error every chunk applied is put back (stream_undo_) and the error
  // returned.
  absl::Status ApplyStreamedLocked(Grads* grads, const std::vector<float*>& into,
                                   const PushStream& stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `request` (accepted, its tables `grads`) is the only gradient of
  // its BSP iteration and its tick closes that iteration: a worker's push
  // carrying end_clock = clock + 1, every table dense BSP, nothing summed
  // for any iteration yet, no checkpoint hold, the iteration the next to
  // close, the worker the last live one at it, and no replica to forward
  // to (the tick counts only once backups hold the push). Then the sum
  // BspTableSum would build is the push itself, bit for bit (one
  // contributor: not scaled), and Push applies it from where it is.
  bool ClosesIterationAloneLocked(const v1::PushRequest& request, const Grads& grads) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One table's part of an accepted push: applied now (SSP, ASP), or added to
  // the pushing worker's gradients of the request's iteration (BSP), moved
  // in whole when it is the worker's first piece of that iteration.
  void ApplyOrHoldLocked(const v1::PushRequest& request, TableGrads* grads)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joiner: applies (SSP/ASP) or buffers (BSP, also for an iteration this
  // server already closed: the caller applies it) a push forwarded while the
  // group's transfer ran, once; no map check (it was made on arrival).
  absl::Status ApplyHeldPushLocked(const v1::PushRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker's push must reach its group's primary; a forwarded one a replica.
  absl::Status CheckGroupRole(const v1::PushRequest& request) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A worker's own push must come from a worker this server's map still
  // lists (see Push); OK for forwarded pushes.
  absl::Status CheckPusherLive(const v1::PushRequest& request) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A worker's request (`what`: "push", "clock") made under map `version`
  // by `incarnation` of `worker`: OK when the map lists that incarnation
  // live, or lists no incarnation of the worker yet (a joiner). Errors:
  // InvalidArgument (incarnation 0), FailedPrecondition (an older
  // incarnation; one declared dead or left; one the map does not know),
  // Unavailable (the request names a newer map: retry once it is here).
  absl::Status CheckWorkerLocked(absl::string_view what, uint32_t worker, uint64_t incarnation,
                                 uint64_t version) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Table*> FindTable(uint32_t id, const std::string& name) const;
  // Min clock a pull of `request` needs, or INT64_MIN when it need not wait.
  int64_t RequiredClock(const v1::PullRequest& request) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads every table of the request into the response.
  void Serve(const v1::PullRequest& request, v1::PullResponse* response, int64_t min_clock,
             const PullReplyArea& area) const;
  // Serve's tables written into `area` when all of them fit (false, and
  // nothing written, otherwise).
  bool ServeInto(const v1::PullRequest& request, v1::PullResponse* response,
                 const PullReplyArea& area) const;
  // Where each table of `pull` goes in its reply area, as ServeInto lays
  // it out (byte offsets from the area's start), and the bytes in all.
  struct ReplyLayout {
    std::vector<uint64_t> floats;
    std::vector<uint64_t> offsets;
    uint64_t total = 0;
  };
  ReplyLayout LayOut(const v1::PullRequest& pull) const;
  // For each of `grads`, where Push writes that table's new values for the
  // riding pull of `read_back` (null: nowhere), marking them written.
  std::vector<float*> ReadBackTargets(const Grads& grads, PullReadBack* read_back) const;
  // Applies buffered iterations below the min clock (stopping at checkpoint
  // boundaries to snapshot, and at a held boundary); moves released waiters
  // to `ready`.
  void Advance(std::vector<Waiter>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the buffered BSP iterations below `clock`.
  void ApplyBelow(int64_t clock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The gradients of `table` for BSP iteration `iteration`: created with
  // its buffers taken from spare buffers, or with room for every value the
  // table holds here when it is dense (one push per chunk per iteration
  // fills one without regrowing).
  BspTableSum& PendingLocked(int64_t iteration, const Table& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The min clock pulls may see: the workers' minimum, capped by a hold.
  int64_t ReleasedClock() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a pull needing `required` (kNoWait: none) and its worker's own
  // clock at `own_required` (0: none) must still wait, `released` being
  // ReleasedClock(). A worker no longer live here waits for no tick of its
  // own (its pushes are refused anyway).
  bool MustWait(uint32_t worker, int64_t required, int64_t own_required, int64_t released) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ShardSnapshot> SnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stats without the primary counts.
  void StatsLocked(v1::StatsResponse* response) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Snapshots at the current boundary into the sink (once per clock).
  void TakeCheckpointLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Announces new joiners of this server's primary groups (joiner_sink_) and
  // starts holding forwarded pushes of groups this server joins.
  void UpdateJoinersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Table::CheckKeys' answer, with a key of a partition not held here
  // (FailedPrecondition) marked as routed by another map than this server's
  // (common/status_conversion.h WithCurrentMap): the client refreshes and
  // retries.
  absl::StatusOr<uint64_t> RoutedHere(absl::StatusOr<uint64_t> checked) const;
  // Starts holding `partition` and loads it from complete checkpoint record
  // `record` (a group that lost every copy; map `version` says so). Returns
  // the record's clock. Errors: FailedPrecondition (no checkpoint
  // directory), the loader's and Table::ImportPartition's.
  absl::StatusOr<int64_t> RestorePartitionLocked(uint32_t partition, uint64_t record,
                                                 uint64_t version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills every held partition from loader_ (first ready map).
  absl::Status LoadInitialRowsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompleteReady(std::vector<Waiter>* ready, int64_t min_clock);

  // Constant after construction.
  const uint32_t server_id_;
  const v1::JobSpec job_;
  ShardMetrics* const metrics_;

  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t map_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t assignment_version_ ABSL_GUARDED_BY(mu_) = 0;  // map version the tables follow
  std::vector<uint32_t> partitions_ ABSL_GUARDED_BY(mu_);  // held here (primary or backup)
  struct Group {
    uint32_t primary = 0;
    std::vector<uint32_t> backups;
    std::vector<uint32_t> joining;
    bool operator==(const Group&) const = default;
  };
  std::map<uint32_t, Group> groups_ ABSL_GUARDED_BY(mu_);  // replica group -> replicas
  std::vector<uint32_t> group_of_ ABSL_GUARDED_BY(mu_);     // partition -> replica group
  std::map<uint32_t, std::string> addresses_ ABSL_GUARDED_BY(mu_);  // server -> address
  // Outlives tables_ (declared before it is destroyed after).
  std::unique_ptr<ColdRowStore> cold_ ABSL_GUARDED_BY(mu_);
  // Takes pieces of a large dense update, pull answer or finiteness check
  // (fork_join.h); null when the process may use one CPU. Set at
  // construction; outlives tables_.
  const std::unique_ptr<ForkJoin> helper_;
  // Fencing deadline (SetLeaseDeadline) on the monotonic clock, in
  // nanoseconds since its origin. Atomic, not under mu_: the thread that
  // renews the lease must never wait for a long snapshot or restore.
  std::atomic<int64_t> lease_deadline_ns_{std::numeric_limits<int64_t>::max()};
  // map_version_, readable without mu_ (the heartbeat reports it).
  std::atomic<uint64_t> published_version_{0};
  // The long operation holding mu_ now, or null (busy()).
  mutable std::atomic<const char*> busy_{nullptr};
  // A request routed to another server was refused and logged (CheckRoute).
  mutable std::atomic<bool> misrouted_noted_{false};
  // Primary: joiners per group whose transfer started (forwarded to).
  std::map<uint32_t, std::set<uint32_t>> joiners_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<uint32_t, uint32_t>> announced_ ABSL_GUARDED_BY(mu_);  // (group, joiner)
  JoinerSink joiner_sink_;
  RestoreLoader restore_loader_;
  // Joiner: groups this server joins and has not installed yet, with the
  // forwarded pushes that arrived meanwhile.
  std::map<uint32_t, std::vector<v1::PushRequest>> receiving_ ABSL_GUARDED_BY(mu_);
  std::set<uint32_t> installed_ ABSL_GUARDED_BY(mu_);  // groups received by transfer
  // Joiner: the rows of the transfer in progress per group, applied only at
  // its end, so a transfer cut short leaves nothing behind.
  struct Incoming {
    uint64_t transfer_id = 0;
    std::vector<std::pair<uint32_t, std::pair<uint32_t, PartitionRows>>> rows;  // table, (p, rows)
  };
  std::map<uint32_t, Incoming> incoming_ ABSL_GUARDED_BY(mu_);
  // Written once, under mu_, by the first ready InstallMap before ready_ is
  // set; read-only afterwards (each Table has its own lock for its values), so
  // readers that saw ready_ under mu_ may use it without mu_.
  std::vector<std::unique_ptr<Table>> tables_;
  // What a streamed push changed, until it all is applied (ApplyStreamedLocked).
  DenseTable::Undo stream_undo_ ABSL_GUARDED_BY(mu_);
  ClockTracker clocks_ ABSL_GUARDED_BY(mu_);
  int64_t closed_before_ ABSL_GUARDED_BY(mu_) = 0;  // BSP iterations < this are applied
  std::map<int64_t, IterationBuffer> pending_ ABSL_GUARDED_BY(mu_);
  // Emptied buffers of applied iterations, per table id, refilled by the
  // next iterations' pushes: once a BSP job runs, a dense table's iteration
  // allocates nothing (at most as many buffers as one iteration used).
  std::map<uint32_t, std::vector<GradBuffer>> spare_ ABSL_GUARDED_BY(mu_);
  // (group, worker, incarnation) -> applied push sequences. A worker
  // restarted under its id numbers its pushes from 1 again: its new
  // incarnation gets a window of its own.
  // Under windows_mu_, taken inside mu_: pushes applied under the shared
  // lock record their sequences here.
  mutable absl::Mutex windows_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<WindowKey, SequenceWindow> applied_ ABSL_GUARDED_BY(windows_mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> pushes_applied_{0};
  uint64_t pulls_served_ ABSL_GUARDED_BY(mu_) = 0;

  // Checkpoints. Set before the first ready map, read under mu_ afterwards.
  int64_t every_clocks_ = 0;
  SnapshotSink sink_;
  InitialRowsLoader loader_;
  int64_t start_clock_ = 0;
  int64_t last_checkpoint_clock_ ABSL_GUARDED_BY(mu_) = -1;
  struct Hold {
    bool active = false;
    uint64_t request_id = 0;
    int64_t limit = 0;       // boundary not passed while active
    bool committed = false;  // limit is the cut to snapshot at
    absl::Time until;
  };
  Hold hold_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_SHARD_H_
