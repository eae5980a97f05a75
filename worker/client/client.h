// The Cairn client: what a training loop calls to pull parameters and push
// gradients. Usable without cairn-worker: link cairn_client.
//
// Connect() registers with the coordinator as a worker, learns the job's
// tables and the partition map, and waits at the start-up barrier until every
// expected worker and server has registered. Each Pull/Push groups the keys
// of all tables by owning server and sends one request per server (cut into
// pieces of rpc.request_split_size, or rpc.shared_memory_split_size to a
// server whose shared region the worker holds; uncut with one server when
// dense tables lie one after the other in a buffer LendSharedBuffer lent),
// to all servers in
// parallel, at most rpc.requests_in_flight pieces at a time to each; the
// returned future completes when every server answered. A request rejected
// for a stale partition map is retried once after fetching the new map.
//
// Iterations: clock() is the number of iterations this worker completed.
// A pull reads values for iteration t = clock(): each server serves it once
// every live worker has completed t - s iterations (and their pushes for them
// are applied), s being the table's staleness bound (BSP: s = 0; ASP: no
// wait). Pushes belong to iteration clock(). Clock() ends the iteration on
// every server (also those it pushed nothing to). A worker that joins after
// the start-up barrier starts at the servers' current minimum clock.
//
// Cache (row_cache.h): pulled values of BSP and SSP tables are kept with the
// server min clock they reflect and reused while the table's bound allows, so
// SSP saves round trips as well as waits (ASP reads always go to the
// servers). A push invalidates the keys it pushes, so a worker always reads
// its own writes (a dense table pushed every iteration always misses).
//
// Thread-safe: Pull/Push may be called from several threads; Clock() must not
// run concurrently with a Pull or Push of the same iteration.
#ifndef CAIRN_WORKER_CLIENT_CLIENT_H_
#define CAIRN_WORKER_CLIENT_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/bytes.h"
#include "worker/client/shared_buffer.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace cairn {
namespace v1 {
class JobSpec;
class TableSpec;
}  // namespace v1

struct ClientOptions {
  std::string coordinator = "127.0.0.1:7070";  // host:port
  int worker_id = -1;            // -1: the coordinator picks
  // How long Connect() retries an unreachable coordinator and waits at the
  // start-up barrier before failing with Unavailable / DeadlineExceeded.
  absl::Duration connect_timeout = absl::Seconds(60);
  // Deadline of each RPC; also bounds a BSP/SSP pull's wait.
  absl::Duration rpc_deadline = absl::Seconds(60);
  // Attempts at a push request that timed out (>= 1). Each attempt resends
  // the same bytes with the same sequence number, which servers apply at
  // most once, so a push that landed but whose answer was late is not
  // applied again (field case B26). See Client::PushDense for what each
  // error means.
  int push_attempts = 3;
  // Attempts at a pull request that timed out (>= 1): a pull only reads,
  // so it is simply sent again. Not when its answer was to go in place into
  // a lent buffer (LendSharedBuffer) the timed-out attempt spoiled: the
  // server may still write it late; the pull fails and the caller moves off
  // that buffer.
  int pull_attempts = 3;
  // Requests of one pull or push in flight to one server at a time (a
  // table above rpc.request_split_size goes in several); the next is sent
  // as one is answered. Bounds what a step holds in flight per server, on
  // both sides, to this many requests (4 MiB with the default split, 8
  // MiB through a shared region). 0:
  // all at once. cairn-worker takes it from rpc.requests_in_flight.
  int requests_in_flight = 4;
  // How long a caller waiting for its call's answer (PullAndWait,
  // PushClockAndPull, the blocking Push and Pull) polls for it without
  // sleeping before it sleeps (common/busy_poll.h; between polls it yields
  // its CPU to any thread that needs it); zero: it sleeps at once.
  // cairn-worker takes it from rpc.busy_poll.
  absl::Duration busy_poll = absl::ZeroDuration();
  // Sends heartbeats to keep this worker's lease. Off only in tests.
  bool heartbeat = true;
  std::string metrics_address;   // reported to the coordinator
  // Capacity of the worker-side cache in bytes (values plus ~96 bytes per
  // key); 0 turns it off. Fixed at Connect().
  uint64_t cache_bytes = 64ull << 20;
  // The same-host path (docs/shared-memory.md) when the job turns it on
  // (rpc.shared_memory); false sends this worker's values through gRPC
  // whatever the job says.
  bool shared_memory = true;
  // With busy_poll above zero and a region, offer each server a call slot
  // in it, through which pushes go while the server polls
  // (docs/shared-memory.md, "Calls through the region"); cairn-worker
  // takes it from rpc.call_slots.
  bool call_slots = true;
  // Where the client's metrics (client_metrics.h) are registered; null: none.
  // Not owned; must outlive the client.
  prometheus::Registry* metrics_registry = nullptr;
};

// Counters since Connect(), for logs and tests. Keys are dense chunks or
// embedding rows; a "read" is one table's part of one pull.
struct ClientStats {
  uint64_t pulls = 0;
  uint64_t reads = 0;
  uint64_t cache_hits = 0;    // keys served from the cache
  uint64_t cache_misses = 0;  // keys fetched from servers
  uint64_t cache_bytes = 0;
  int64_t max_read_staleness = 0;   // clocks; see cairn_client_read_staleness_clocks
  double mean_read_staleness = 0;   // clocks
  double pull_seconds = 0;          // summed over pulls, waits included
  // The same-host path (docs/shared-memory.md): regions servers accepted,
  // and the requests and value bytes that went through them.
  uint64_t shared_memory_regions = 0;
  uint64_t shared_memory_requests = 0;
  uint64_t shared_memory_bytes = 0;
  // Pulls of PushClockAndPull that rode on the step's push (one call for
  // both: one server, values through its region).
  uint64_t pulls_with_push = 0;
  // Requests of those through regions whose values were read (pushes) or
  // written (pulls) in place in a buffer LendSharedBuffer lent, not copied.
  uint64_t shared_memory_in_place = 0;
  // Pushes of those sent while their values were written, the server
  // applying each part as it was (Client::GradientStream).
  uint64_t streamed_pushes = 0;
  // Pushes posted through a region's call slot instead of a gRPC call
  // (docs/shared-memory.md, "Calls through the region").
  uint64_t slot_calls = 0;
};

// A dense table's whole tensor in caller memory (table's element count floats).
struct DenseBuffer {
  std::string table;
  absl::Span<float> values;
};
struct ConstDenseBuffer {
  std::string table;
  absl::Span<const float> values;
  // The gradient's shape as the caller holds it; servers refuse a push whose
  // shape is not the table's (InvalidArgument naming both), even with the
  // same element count. Empty: the table's own shape.
  std::vector<int64_t> shape;
};

// Embedding rows of one sparse table in caller memory: keys.size() x the
// table's width floats, row i for keys[i].
struct SparseRows {
  std::string table;
  absl::Span<const Key> keys;
  absl::Span<float> values;
};
struct ConstSparseRows {
  std::string table;
  absl::Span<const Key> keys;
  absl::Span<const float> values;
};

class Client {
 public:
  // Errors: Unavailable (coordinator unreachable within connect_timeout),
  // DeadlineExceeded (start-up barrier not passed in time), InvalidArgument
  // (bad options).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  // Destroy a client only once the futures of its Pull and Push calls are
  // ready: their completions use it.
  virtual ~Client() = default;

  virtual uint32_t worker_id() const = 0;
  virtual const v1::JobSpec& job() const = 0;
  // NotFound naming the table when there is none of that name.
  virtual absl::StatusOr<const v1::TableSpec*> Table(const std::string& name) const = 0;
  virtual int64_t clock() const = 0;
  // Thread-safe snapshot of the counters above.
  virtual ClientStats Stats() const = 0;

  // Pulls whole dense tensors. Each buffer must hold the table's element count.
  // Errors: NotFound (table), InvalidArgument (size), DeadlineExceeded (each
  // of ClientOptions::pull_attempts attempts timed out, in the barrier or
  // staleness wait or at a stalled server; one attempt when the buffer is
  // lent memory, which is then spoiled), Unavailable, FailedPrecondition
  // (map still stale after one refresh).
  virtual std::future<absl::Status> PullDense(std::vector<DenseBuffer> tables) = 0;
  // Pushes gradients of whole dense tensors (same sizes as PullDense), as
  // float32 with their shapes (ConstDenseBuffer::shape).
  //
  // Each server applies each request of a push at most once, also across
  // retries and failovers: requests carry (worker, incarnation, replica
  // group, sequence). What the result means:
  // - OK: applied exactly once on every replica of every group it touched.
  // - InvalidArgument (shape, dtype, size, non-finite values), NotFound
  //   (table): refused before anything changed; nothing applied.
  // - DeadlineExceeded: the request timed out ClientOptions::push_attempts
  //   times; the outcome is unknown: it may have been applied (once) or
  //   not. Do not push the same gradients again (that is a new update);
  //   pull to see the state.
  // - Unavailable, FailedPrecondition (this worker was declared dead, left
  //   or was replaced by a newer incarnation of its id) and others after
  //   the retries: each request was applied at most once; those that had
  //   reached a server before the failure may have been.
  //
  // The gradients travel from the caller's memory without a copy
  // (push_payload.h): they must stay valid and unchanged until the future
  // is ready, which it becomes only once gRPC holds none of them. A table
  // with wire_dtype bf16 or fp16 is narrowed into a buffer of the client's
  // first, rounded to nearest even.
  virtual std::future<absl::Status> PushDense(std::vector<ConstDenseBuffer> grads) = 0;

  // Pulls embedding rows: out receives keys.size() * width floats, row i for
  // keys[i]. Keys may repeat and come in any order. Rows never pushed come
  // from the table's initializer.
  virtual std::future<absl::Status> PullSparse(const std::string& table,
                                               absl::Span<const Key> keys,
                                               absl::Span<float> out) = 0;
  // Pushes row gradients (keys.size() * width floats). A key given more than
  // once has its gradients summed before the optimizer sees them (once).
  // Errors, their meaning and the lifetime of `keys` and `grads`: as
  // PushDense.
  virtual std::future<absl::Status> PushSparse(const std::string& table,
                                               absl::Span<const Key> keys,
                                               absl::Span<const float> grads) = 0;

  // The same for several sparse tables as one operation: each server gets
  // one request for all of them (cut at rpc.request_split_size), not one
  // per table. A model with an embedding table per field pulls (pushes) a
  // step's rows this way. The first error of any table fails the whole
  // call; for a push, as PushDense says of a failed push.
  virtual std::future<absl::Status> PullSparse(std::vector<SparseRows> tables) = 0;
  virtual std::future<absl::Status> PushSparse(std::vector<ConstSparseRows> grads) = 0;

  // Dense tensors and sparse rows of several tables as one operation: one
  // request per server for all of them (cut at rpc.request_split_size).
  // What each part needs and means: as PullDense / PullSparse and
  // PushDense / PushSparse.
  virtual std::future<absl::Status> Pull(std::vector<DenseBuffer> dense,
                                         std::vector<SparseRows> sparse) = 0;
  virtual std::future<absl::Status> Push(std::vector<ConstDenseBuffer> dense,
                                         std::vector<ConstSparseRows> sparse) = 0;

  // Pull and Push, waiting for the result on the calling thread: the same
  // requests, results and errors as Pull(...).get() and Push(...).get(), but
  // the calling thread takes the servers' answers off gRPC itself, as a
  // blocking gRPC call does, instead of being woken by the client's thread
  // that completes the calls of Pull and Push (a hand-off that costs about
  // a quarter of a 1 MiB call over loopback; docs/benchmarks.md). For a caller that waits at once, as a
  // training step does. Thread-safe, like the forms above.
  virtual absl::Status PullAndWait(std::vector<DenseBuffer> dense,
                                   std::vector<SparseRows> sparse) = 0;
  virtual absl::Status PushAndWait(std::vector<ConstDenseBuffer> dense,
                                   std::vector<ConstSparseRows> sparse) = 0;

  // PushAndWait, then Clock(), in fewer round trips: when the push is one
  // request (one server, under the split), that server's tick
  // rides on it (PushRequest.end_clock) and is recorded once the push is
  // applied there and on its backups; the other live servers get theirs as
  // Clock() sends them, after the push was acknowledged. The same ordering
  // as the two calls (docs/design.md, Consistency). A push of several requests
  // carries no tick: a server's tick must follow every push of the
  // iteration it holds, and a backup receives its copies from other
  // primaries, by maps this client may not have seen yet.
  //
  // Every other push of this iteration must have completed before the call.
  // Errors: as PushAndWait. Inputs refused before anything is sent (NotFound,
  // InvalidArgument from the checks on this side), a lost registration or an
  // earlier tick's failure return at once, and the iteration does not end;
  // otherwise it ends, whatever the push's result, and clock() is clock() + 1
  // after (a failed push means what PushDense says: some of its requests may
  // have been applied).
  virtual absl::Status PushAndClock(std::vector<ConstDenseBuffer> dense,
                                    std::vector<ConstSparseRows> sparse) = 0;

  // PushAndClock, then PullAndWait of the next iteration's values into
  // `next_dense` / `next_sparse`, in fewer calls than the two. When the push
  // is one request (it carries the tick), the pull goes out with the push,
  // not after its answer, marked as sent ahead of the tick
  // (PullRequest.after_tick): it does not tick the clock as a pull does, and
  // each server holds it, beyond the tables' bound, until it has recorded
  // this worker's tick, so it reads this push and every earlier one
  // (read-my-writes, under BSP, SSP and ASP alike). Under BSP the server
  // answers it as the push closes the iteration. When the push is several
  // requests, the pull goes once the push is acknowledged, as a plain pull
  // that carries the tick to each server it reads from, and only the other
  // servers get a ClockRequest: the same round trips, fewer calls.
  //
  // Returns what PushAndClock returns, and the iteration ends as it says.
  // `pulled` (not null) receives the pull's result, as PullAndWait's; it is
  // not run (Cancelled) when the push's inputs or the call were refused
  // before anything was sent. A pull ahead that failed can simply be done
  // again with PullAndWait. Inputs of the pull refused on this side return
  // at once, with nothing sent. The buffers of both must stay valid until
  // the call returns.
  //
  // `meanwhile` runs once, on the calling thread, after the push (and a
  // pull riding on it) is sent and before the wait for them; not at all
  // when the inputs are refused before anything is sent (the errors above
  // that return at once). Work that touches neither call's buffers (a
  // training loop's next batch) then overlaps the round trip instead of
  // following it. Answers that arrive while it runs are taken once it
  // returns; it must not call this client.
  virtual absl::Status PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                        std::vector<ConstSparseRows> sparse,
                                        std::vector<DenseBuffer> next_dense,
                                        std::vector<SparseRows> next_sparse,
                                        absl::Status* pulled,
                                        absl::FunctionRef<void()> meanwhile) = 0;
  // A gradient still being written when its push goes (PushClockAndPull's
  // `stream`): the server applies each part as it is written, while the
  // caller computes the rest (docs/shared-memory.md, "A push sent while it
  // is written").
  struct GradientStream {
    // How many bytes of the push's values (its dense buffers, one after the
    // other, in order) are written, counted back from the end of the last
    // (the server applies them last first); the writer stores kAllWritten,
    // with release order, once all are. 8-byte aligned, in a block lent by
    // this client (LendSharedBuffer) outside the values.
    std::atomic<uint64_t>* written = nullptr;
    // Writes the rest of the values, advancing `written` (release order)
    // as it goes, and stores kAllWritten last. Runs once, on the calling
    // thread.
    absl::FunctionRef<void()> write;
  };
  static constexpr uint64_t kAllWritten = ~uint64_t{0};

  // PushClockAndPull of values not all written yet. When the push can go
  // while they are written (it is one request of dense tables in one block
  // lent by this client to this job's only server, every table BSP and
  // float32 on the wire, and this worker is the job's only one), it goes
  // with `written` (PushRequest.written) and `stream.write` runs right
  // after, before `meanwhile`; otherwise `stream.write` runs first and the
  // push goes as PushClockAndPull's. `stream.written` is set to 0 here.
  // Returns and fails as PushClockAndPull; a push refused because its
  // writing stalled (DeadlineExceeded) is sent again, once written, as any
  // push that timed out.
  virtual absl::Status PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                        std::vector<DenseBuffer> next_dense,
                                        absl::Status* pulled,
                                        absl::FunctionRef<void()> meanwhile,
                                        const GradientStream& stream) {
    stream.write();
    return PushClockAndPull(std::move(dense), {}, std::move(next_dense), {}, pulled, meanwhile);
  }

  // The same with nothing to do meanwhile.
  absl::Status PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                std::vector<ConstSparseRows> sparse,
                                std::vector<DenseBuffer> next_dense,
                                std::vector<SparseRows> next_sparse, absl::Status* pulled) {
    return PushClockAndPull(std::move(dense), std::move(sparse), std::move(next_dense),
                            std::move(next_sparse), pulled, [] {});
  }

  // `bytes` of this worker's shared region with the job's one server, for
  // the caller to keep its values in (SharedBuffer): null when the job has
  // several servers, none on this host, no region (rpc.shared_memory:
  // false, or the server refused it), or the region has no free block that
  // large (a lent buffer may use at most a quarter of the region, the rest
  // is the room of requests in flight). Nothing changes then: the caller
  // uses its own memory, copied through the region. Thread-safe.
  virtual std::unique_ptr<SharedBuffer> LendSharedBuffer(size_t bytes) = 0;

  // Ends this worker's iteration clock() on every server; clock() + 1 after.
  // The ticks are sent without waiting for their replies (the next pull
  // carries the clock too, so no round trip sits on the step's critical
  // path); a tick that failed is reported by the next Clock() or Finish().
  virtual absl::Status Clock() = 0;

  // Leaves the job cleanly: servers drop this worker from barriers and the
  // coordinator shows it LEFT; logs one line of ClientStats. The client is
  // unusable afterwards.
  virtual absl::Status Finish() = 0;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CLIENT_H_
