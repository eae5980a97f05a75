// The gRPC ParameterService of cairn-server (asynchronous API, served on one
// CompletionLoop thread, common/completion_loop.h). Handlers only convert
// messages and statuses; a pull that must wait parks its call and is
// answered by the thread that releases it (Shard::Pull's callback), so the
// loop's thread never blocks on a barrier.
#ifndef CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
#define CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_

#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/async_unary_call.h"
#include "common/security/roles.h"
#include "common/value_pieces.h"
#include "server/shard/rpc/call_slots.h"
#include "server/shard/rpc/shared_regions.h"

namespace cairn {

class ReplicaForwarder;
class Shard;
class ShardMetrics;
struct PullReadBack;

// Every method of cairn.v1.ParameterService on gRPC's asynchronous API; Pull
// and Push raw, their bytes cairn.v1 messages as in the .proto: a pull's
// answer's values go out as a slice of their own (pull_reply.h), a push's
// are applied from the slices gRPC received them in
// (common/received_tables.h).
using AsyncParameterService = v1::ParameterService::WithRawMethod_Pull<
    v1::ParameterService::WithRawMethod_Push<v1::ParameterService::WithAsyncMethod_Clock<
        v1::ParameterService::WithAsyncMethod_Stats<
            v1::ParameterService::WithAsyncMethod_Checkpoint<
                v1::ParameterService::WithAsyncMethod_Replicate<
                    v1::ParameterService::WithAsyncMethod_OpenRegion<
                        v1::ParameterService::Service>>>>>>>;

// Thread-safe. `metrics` (may be null) must outlive the service.
class ParameterService final : public AsyncParameterService {
 public:
  // `max_wait` caps a pull's wait when the caller set no earlier deadline.
  // Until Attach() is called every request gets UNAVAILABLE (the server
  // listens before it has registered and learned the job).
  ParameterService(ShardMetrics* metrics, absl::Duration max_wait);

  // What requests are served from: one registration's shard, and what to
  // call (on the loop's thread; it must only queue) once this server holds a
  // replica group it joins.
  struct Attached {
    std::shared_ptr<Shard> shard;
    std::function<void(uint32_t group)> on_replica_installed;
  };
  // Serves requests from `attached` from now on, or refuses them all with
  // UNAVAILABLE when it is null (a server between two registrations, see
  // server/shard/incarnation.h). A request already running keeps the one it
  // started with: it holds a reference to `attached` until it is answered, a
  // parked pull included, so `attached.use_count()` tells when none is left.
  void Attach(std::shared_ptr<const Attached> attached) ABSL_LOCKS_EXCLUDED(mu_);
  // Replication of pushes to backups; `forwarder` must outlive the service.
  // Without one (or a replication factor of 1) pushes are acknowledged once
  // applied here. Call before serving.
  void SetForwarder(ReplicaForwarder* forwarder) { forwarder_ = forwarder; }
  // rpc.push_ack: with `when_accepted`, a push through gRPC that Shard::Push
  // may answer before its update (SSP or ASP, no tick or riding pull, no
  // backup; its values inline) is answered once checked and recorded, and
  // applied after; without, every push is answered once applied. Call
  // before serving.
  void AnswerPushesWhenAccepted(bool when_accepted) { answer_accepted_ = when_accepted; }

  // Serves every method on `loop` (its server_cq, of the server this
  // service is registered with), from now until the server shuts down.
  // Call once, after the server started.
  void Serve(CompletionLoop* loop);
  // The call slots workers offer with their regions (call_slots.h): once
  // this is called, OpenRegion accepts them, and the loop's thread must
  // poll what this returns (CompletionLoop::StartPolling). Without it,
  // pushes come through gRPC alone. Call before serving.
  SidePoll* ServeCallSlots() {
    call_slots_enabled_ = true;
    return &call_slots_;
  }

 private:
  using PullCall = AsyncUnaryCall<ParameterService, grpc::ByteBuffer, grpc::ByteBuffer>;
  using PushCall = AsyncUnaryCall<ParameterService, grpc::ByteBuffer, grpc::ByteBuffer>;
  using ClockCall = AsyncUnaryCall<ParameterService, v1::ClockRequest, v1::ClockResponse>;
  using StatsCall = AsyncUnaryCall<ParameterService, v1::StatsRequest, v1::StatsResponse>;
  using CheckpointCall = AsyncUnaryCall<ParameterService, v1::ShardCheckpointRequest,
                                        v1::ShardCheckpointResponse>;
  using OpenRegionCall =
      AsyncUnaryCall<ParameterService, v1::OpenRegionRequest, v1::OpenRegionResponse>;
  using ReplicateCall =
      AsyncUnaryCall<ParameterService, v1::ReplicaChunk, v1::ReplicaChunkResponse>;

  // The handlers, on the loop's thread. Pull's request: a PullRequest's
  // bytes; its reply: its PullResponse's. Push's: a PushRequest's and a
  // PushResponse's.
  void ServePull(PullCall* call);
  void ServePush(PushCall* call);
  // A push or pull taken from a worker's call slot, answered into the slot.
  void ServeSlotCall(std::unique_ptr<SlotCall> call);
  // A pull from a call slot: served when its answer's values go into the
  // worker's region (its reply_to resolves), else declined (the worker
  // sends it through gRPC).
  void ServeSlotPull(std::unique_ptr<SlotCall> call);
  // Where a push came from: the caller's role under TLS (none without),
  // and the call's deadline.
  struct PushFrom {
    std::optional<Role> role;
    absl::Time deadline;
  };
  // A push, however it came: `request` and `response` stay valid until
  // `done` has run (once, on any thread, with the call's status; the
  // response is filled when it is OK). `received` (empty: the request's
  // own): each table's inline values as gRPC received them, valid until
  // `done` has run too. With `may_answer_accepted` (and the service's
  // AnswerPushesWhenAccepted), `done` may run before the update, inside
  // this call: `request` and `received` must then stay valid until it
  // returns as well.
  void HandlePush(const v1::PushRequest* request, v1::PushResponse* response, PushFrom from,
                  absl::Span<const ValuePieces> received,
                  std::function<void(const grpc::Status&)> done,
                  bool may_answer_accepted = false);
  void ServeClock(ClockCall* call);
  void ServeStats(StatsCall* call);
  // The coordinator's two-phase checkpoint (Shard::PrepareCheckpoint etc.).
  void ServeCheckpoint(CheckpointCall* call);
  // A worker on this host offers a shared-memory region for values
  // (shared_regions.h). Served also before Attach: it needs no shard.
  void ServeOpenRegion(OpenRegionCall* call);
  // A chunk of a replica group's state from its primary (Shard::ReceiveReplica).
  void ServeReplicate(ReplicateCall* call);

  // What to serve from; null while nothing is attached (answer NotAttached()).
  std::shared_ptr<const Attached> Current() const ABSL_LOCKS_EXCLUDED(mu_);
  static grpc::Status NotAttached();
  // When a pull's wait ends: the server's longest wait, or what is left of
  // the client's deadline if that comes first (on the monotonic clock,
  // Shard::ExpireWaiters).
  absl::Time PullDeadline(absl::Time call_deadline) const;
  // Serves the pull that rode on a push (PushRequest.pull) into `response`
  // (its values into the worker's region when its reply_to names room
  // there, else inline), then runs `done` with the result; it waits at most
  // half of what is left of the push's deadline. `pull` and `response` stay
  // valid until then (they are the push's). `read_back` (may be null):
  // what the push already wrote into that region for it (Shard::Push).
  void PullAfterPush(absl::Time push_deadline, std::shared_ptr<const Attached> attached, const v1::PullRequest* pull,
                     v1::PullResponse* response, std::shared_ptr<const PullReadBack> read_back,
                     std::function<void(absl::Status)> done);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Attached> attached_ ABSL_GUARDED_BY(mu_);
  ReplicaForwarder* forwarder_ = nullptr;
  ShardMetrics* const metrics_;
  const absl::Duration max_wait_;
  SharedRegions regions_;
  CallSlots call_slots_{[this](std::unique_ptr<SlotCall> call) { ServeSlotCall(std::move(call)); }};
  bool call_slots_enabled_ = false;
  bool answer_accepted_ = false;  // AnswerPushesWhenAccepted
  // What each method's calls run (PullCall::Listen etc. keep pointers).
  const PullCall::Handler pull_handler_;
  const PushCall::Handler push_handler_;
  const ClockCall::Handler clock_handler_;
  const StatsCall::Handler stats_handler_;
  const CheckpointCall::Handler checkpoint_handler_;
  const OpenRegionCall::Handler open_region_handler_;
  const ReplicateCall::Handler replicate_handler_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
