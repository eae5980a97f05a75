// The Client implementation (see client.h): async gRPC calls of the requests
// a pull or push is cut into (request_plan.h), completion counting, a window
// of requests in flight per server, and retry after a stale map.
#ifndef CAIRN_WORKER_CLIENT_CLIENT_IMPL_H_
#define CAIRN_WORKER_CLIENT_CLIENT_IMPL_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.pb.h"
#include "common/coordinator_client.h"
#include "common/poll_ahead.h"
#include "common/push_payload.h"
#include "common/work_queue.h"
#include "worker/client/call_slot_client.h"
#include "worker/client/client.h"
#include "worker/client/client_metrics.h"
#include "worker/client/clock_ticker.h"
#include "worker/client/request_plan.h"
#include "worker/client/router.h"
#include "worker/client/row_cache.h"
#include "worker/client/shard_channel.h"
#include "worker/client/worker_session.h"

namespace grpc {
class Alarm;
class CompletionQueue;
}  // namespace grpc

namespace cairn {

class ClientImpl final : public Client {
 public:
  // `connect` opens the channel to a server (shard_channel.h); null: gRPC,
  // with the job's message limit and lease as keepalive.
  ClientImpl(const ClientOptions& options, std::unique_ptr<CoordinatorChannel> coordinator,
             ShardConnector connect);
  ~ClientImpl() override;

  // Registers, waits for the start-up barrier and connects to the servers.
  absl::Status Start();

  uint32_t worker_id() const override { return worker_id_; }
  const v1::JobSpec& job() const override { return job_; }
  absl::StatusOr<const v1::TableSpec*> Table(const std::string& name) const override;
  int64_t clock() const override { return clock_.load(); }
  ClientStats Stats() const override;

  std::future<absl::Status> PullDense(std::vector<DenseBuffer> tables) override;
  std::future<absl::Status> PushDense(std::vector<ConstDenseBuffer> grads) override;
  std::future<absl::Status> PullSparse(const std::string& table, absl::Span<const Key> keys,
                                       absl::Span<float> out) override;
  std::future<absl::Status> PushSparse(const std::string& table, absl::Span<const Key> keys,
                                       absl::Span<const float> grads) override;
  std::future<absl::Status> PullSparse(std::vector<SparseRows> tables) override;
  std::future<absl::Status> PushSparse(std::vector<ConstSparseRows> grads) override;
  std::future<absl::Status> Pull(std::vector<DenseBuffer> dense,
                                 std::vector<SparseRows> sparse) override;
  std::future<absl::Status> Push(std::vector<ConstDenseBuffer> dense,
                                 std::vector<ConstSparseRows> sparse) override;
  absl::Status PullAndWait(std::vector<DenseBuffer> dense,
                           std::vector<SparseRows> sparse) override;
  absl::Status PushAndWait(std::vector<ConstDenseBuffer> dense,
                           std::vector<ConstSparseRows> sparse) override;
  absl::Status PushAndClock(std::vector<ConstDenseBuffer> dense,
                            std::vector<ConstSparseRows> sparse) override;
  using Client::PushClockAndPull;
  absl::Status PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                std::vector<ConstSparseRows> sparse,
                                std::vector<DenseBuffer> next_dense,
                                std::vector<SparseRows> next_sparse, absl::Status* pulled,
                                absl::FunctionRef<void()> meanwhile) override;
  absl::Status PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                std::vector<DenseBuffer> next_dense, absl::Status* pulled,
                                absl::FunctionRef<void()> meanwhile,
                                const GradientStream& stream) override;
  std::unique_ptr<SharedBuffer> LendSharedBuffer(size_t bytes) override;
  absl::Status Clock() override;
  absl::Status Finish() override;

  struct Op;

 private:
  struct Servers {
    Router router;
    std::map<uint32_t, std::shared_ptr<ShardChannel>> channels;
    std::map<uint32_t, std::string> addresses;
    std::map<uint32_t, uint64_t> incarnations;  // Member.incarnation of each server
    std::set<uint32_t> alive;  // servers the map shows ALIVE: clocks go to these
    bool only_worker = false;  // the map lists this worker, and no other
  };

  // A caller that waits on its own thread (PullAndWait, PushAndWait): its
  // completion queue, which the op's calls are started on, the alarm
  // that wakes it when the op completes on another thread, and where the
  // op's result goes (no promise: setting one costs a futex wake-up, a
  // system call, on every op).
  struct Waiter {
    grpc::CompletionQueue* cq;
    grpc::Alarm* wake;
    void* wake_tag;          // what `wake` delivers on `cq`
    std::thread::id thread;  // the one driving `cq`
    bool* fulfilled_here;    // set when the result is set on `thread`
    absl::Status* result;    // set before `fulfilled_here` or `wake`
  };

  // PushClockAndPull with one server: where the push is one request, the
  // next iteration's pull rides on it (ShardChannel::PushAndPull). The
  // push op's first Launch leaves the send of that request here, not
  // started; the pull op's first Launch, when the pull is one request to
  // the same server, starts it with the pull's request. A send left over
  // goes alone (send_push(nullopt)).
  struct PullRider {
    grpc::ClientContext* context;  // the pull's, its deadline set
    v1::PullRequest* request;
    uint64_t reply_bytes;
    char* reply_into;  // ContiguousDestination of the pull, or null
    v1::PullResponse* response;
    ShardChannel::Done done;
  };
  struct RiderSlot {
    uint32_t server = 0;
    std::function<void(std::optional<PullRider>)> send_push;  // empty: nothing left here
  };

  // How Run starts an op.
  struct RunOptions {
    // Null, or the thread that will wait for the op, driving its queue.
    const Waiter* waiter = nullptr;
    // Pushes: the tick its requests may carry (Op::end_clock).
    int64_t end_clock = 0;
    // Pulls: the iteration read, when not clock() (Op::after_tick).
    std::optional<int64_t> ahead_clock;
    // When not null, receives the op.
    std::shared_ptr<Op>* op_out = nullptr;
    // When not null, where the push's request and the pull meet
    // (RiderSlot); it outlives the Run calls of both ops.
    RiderSlot* rider = nullptr;
    // Pushes: the count of a streamed push's values written (Op::written).
    const std::atomic<uint64_t>* written = nullptr;
  };

  // Starts a pull or push. With a waiter, the result goes to
  // Waiter::result and the future returned is not valid.
  std::future<absl::Status> Run(bool is_push, std::vector<TableInput> inputs,
                                const RunOptions& run);
  // Run, then drives the waiter's queue until the op's result is in.
  // `ticked` (pushes with an end_clock): receives the servers that recorded
  // it.
  absl::Status RunAndWait(bool is_push, std::vector<TableInput> inputs, int64_t end_clock = 0,
                          std::set<uint32_t>* ticked = nullptr);
  // OK when this worker may end an iteration: not finished, registered,
  // and no earlier tick failed (that failure otherwise).
  absl::Status CanEndIteration() const;
  // Ends iteration clock() on every live server but those in `ticked`
  // (their tick rode on a push): sends the ticks without waiting, then
  // advances clock().
  void EndIteration(const std::set<uint32_t>& ticked);
  // Sends tick `clock` to every live server but those in `skip`, without
  // waiting (ClockTicker::Send).
  void SendTicks(int64_t clock, const std::set<uint32_t>& skip);
  // The inputs of a pull or a push, each checked against its table.
  absl::StatusOr<std::vector<TableInput>> PullInputs(const std::vector<DenseBuffer>& dense,
                                                     const std::vector<SparseRows>& sparse) const;
  absl::StatusOr<std::vector<TableInput>> PushInputs(
      const std::vector<ConstDenseBuffer>& dense,
      const std::vector<ConstSparseRows>& sparse) const;
  // Serves what the cache can of a pull's inputs and returns the rest, as
  // (input, indices) for Launch.
  InputIndices ServeFromCache(Op* op);
  // Drops the keys of a push's inputs from the cache.
  void InvalidatePushed(const Op& op);
  // Records a finished pull's reads in Stats() and the metrics.
  void RecordReads(Op* op);
  // A worker joining after the start-up barrier: learns each server's min
  // clock (a Clock call at its own clock) and starts at the largest.
  absl::Status JoinAtMinimum(absl::Time deadline);
  // Whether `op`'s values, dense tables' whole buffers in float32 one
  // right after the other, lie in one block `channel` lent: sent to that
  // channel's server as one request, it is read or answered in place.
  static bool WholeInLentBlock(const Op& op, const ShardChannel& channel);
  // Whether a push of `dense` may go while it is written, its count at
  // `written` (Client::PushClockAndPull with a GradientStream says when).
  bool CanStream(const std::vector<ConstDenseBuffer>& dense,
                 const std::atomic<uint64_t>* written) const;
  // PushClockAndPull; `written` (may be null): the push is streamed
  // (Op::written).
  absl::Status PushClockAndPullImpl(std::vector<ConstDenseBuffer> dense,
                                    std::vector<ConstSparseRows> sparse,
                                    std::vector<DenseBuffer> next_dense,
                                    std::vector<SparseRows> next_sparse, absl::Status* pulled,
                                    absl::FunctionRef<void()> meanwhile,
                                    const std::atomic<uint64_t>* written);
  // Whether a pull's output overlaps a block `channel` lent that a failed
  // call spoiled: the server may still write it, so the pull is not retried.
  static bool OutputSpoiled(const Op& op, const ShardChannel& channel);
  // Cuts `op`'s listed indices into pieces under the current map and sends
  // them; `resend` (pushes only) are requests of an earlier attempt, sent
  // again as they are to their group's current primary.
  void Launch(const std::shared_ptr<Op>& op,
              const InputIndices* only,
              std::vector<std::shared_ptr<PushPayload>> resend = {});
  void OnOpDone(const std::shared_ptr<Op>& op);
  // Sets `op`'s result. A push's future becomes ready only once gRPC holds
  // no slice of the caller's memory (push_payload.h), so the caller may free
  // its gradients as soon as the future is ready.
  static void CompleteOp(const std::shared_ptr<Op>& op, absl::Status status);
  // Serialized by install_mu_: two refreshes at once (a map change seen by
  // several calls) must not both open a channel to a new server, each
  // offering it a region, and keep the one whose region it replaced.
  absl::Status InstallMap(const v1::PartitionMap& map) ABSL_LOCKS_EXCLUDED(mu_, install_mu_);
  absl::Status RefreshMap() ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<const Servers> servers() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NextSequence(uint32_t group) ABSL_LOCKS_EXCLUDED(mu_);
  void Post(std::function<void()> task);
  // Waits for every clock tick in flight; returns the first failure, if any.
  absl::Status DrainClocks();
  // Non-OK once this worker's registration has ended (worker_session.h).
  absl::Status Lost() const;
  void ExecutorLoop();

  // Constant after Start().
  const ClientOptions options_;
  // How long this client's waits for answers in call slots last (thread-safe).
  PollAhead answers_ahead_{options_.busy_poll};
  const std::unique_ptr<CoordinatorChannel> coordinator_;
  ShardConnector connect_;
  uint32_t worker_id_ = 0;
  uint64_t incarnation_ = 0;  // this registration's; on every request
  v1::JobSpec job_;
  std::map<std::string, const v1::TableSpec*> tables_by_name_;

  std::atomic<int64_t> clock_{0};
  RowCache cache_;
  std::unique_ptr<ClientMetrics> metrics_;  // null without a registry; set in Start()

  // ClientStats counters.
  std::atomic<uint64_t> pulls_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> cache_hits_{0};
  std::atomic<uint64_t> cache_misses_{0};
  std::atomic<int64_t> staleness_sum_{0};
  std::atomic<int64_t> staleness_max_{0};
  std::atomic<int64_t> pull_micros_{0};
  // What the same-host path moved (every channel's).
  const std::shared_ptr<SharedMemoryCounters> shared_memory_ =
      std::make_shared<SharedMemoryCounters>();
  // Held while this client's channels may offer call slots (ClientOptions
  // call_slots, busy_poll above zero and shared_memory).
  std::optional<SlotWaits::Expecting> expecting_slots_;
  // A map refresh the heartbeat asked for is queued on the executor.
  std::atomic<bool> map_refresh_posted_{false};
  std::atomic<bool> finished_{false};

  absl::Mutex install_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::shared_ptr<const Servers> servers_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, uint64_t> next_sequence_ ABSL_GUARDED_BY(mu_);

  // Clock ticks in flight and the first one that failed; set in Start().
  std::unique_ptr<ClockTicker> ticks_;
  // This registration's heartbeat and end; set in Start().
  std::unique_ptr<WorkerSession> session_;

  // Work that must not run on a thread that completes calls (the CallQueue's
  // or a waiting caller's): map refresh, retries.
  WorkQueue<std::function<void()>> tasks_;  // the executor's; closed by the destructor

  std::thread executor_thread_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CLIENT_IMPL_H_
