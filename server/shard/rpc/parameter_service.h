// The gRPC ParameterService of cairn-server (callback API). Handlers only
// convert messages and statuses; a pull that must wait parks its reactor and
// is finished by the thread that releases it (Shard::Pull's callback), so no
// gRPC thread blocks on a barrier.
#ifndef CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
#define CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_

#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "server/shard/rpc/shared_regions.h"

namespace cairn {

class ReplicaForwarder;
class Shard;
class ShardMetrics;

// Thread-safe. `metrics` (may be null) must outlive the service.
// Pull is served raw (its answer's values go out as a slice of their own,
// pull_reply.h); its bytes are cairn.v1.PullRequest and PullResponse as in
// the .proto.
class ParameterService final
    : public v1::ParameterService::WithRawCallbackMethod_Pull<
          v1::ParameterService::CallbackService> {
 public:
  // `max_wait` caps a pull's wait when the caller set no earlier deadline.
  // Until Attach() is called every request gets UNAVAILABLE (the server
  // listens before it has registered and learned the job).
  ParameterService(ShardMetrics* metrics, absl::Duration max_wait);

  // What requests are served from: one registration's shard, and what to
  // call (on a gRPC thread; it must only queue) once this server holds a
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

  // `request`: a PullRequest's bytes; `reply`: its PullResponse's.
  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* reply) override;
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context,
                                 const v1::PushRequest* request,
                                 v1::PushResponse* response) override;
  grpc::ServerUnaryReactor* Clock(grpc::CallbackServerContext* context,
                                  const v1::ClockRequest* request,
                                  v1::ClockResponse* response) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context,
                                  const v1::StatsRequest* request,
                                  v1::StatsResponse* response) override;
  // The coordinator's two-phase checkpoint (Shard::PrepareCheckpoint etc.).
  grpc::ServerUnaryReactor* Checkpoint(grpc::CallbackServerContext* context,
                                       const v1::ShardCheckpointRequest* request,
                                       v1::ShardCheckpointResponse* response) override;
  // A worker on this host offers a shared-memory region for values
  // (shared_regions.h). Served also before Attach: it needs no shard.
  grpc::ServerUnaryReactor* OpenRegion(grpc::CallbackServerContext* context,
                                       const v1::OpenRegionRequest* request,
                                       v1::OpenRegionResponse* response) override;
  // A chunk of a replica group's state from its primary (Shard::ReceiveReplica).
  grpc::ServerUnaryReactor* Replicate(grpc::CallbackServerContext* context,
                                      const v1::ReplicaChunk* request,
                                      v1::ReplicaChunkResponse* response) override;

 private:
  // What to serve from; null, after finishing `reactor` with UNAVAILABLE,
  // while nothing is attached.
  std::shared_ptr<const Attached> CurrentOrFinish(grpc::ServerUnaryReactor* reactor) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // When a pull's wait ends: the server's longest wait, or what is left of
  // the client's deadline if that comes first (on the monotonic clock,
  // Shard::ExpireWaiters).
  absl::Time PullDeadline(const grpc::CallbackServerContext& context) const;
  // Serves the pull that rode on a push (PushRequest.pull) into `response`
  // (its values into the worker's region when its reply_to names room
  // there, else inline), then runs `done` with the result; it waits at most
  // half of what is left of the push's deadline. `pull` and `response` stay
  // valid until then (they are the push's).
  void PullAfterPush(const grpc::CallbackServerContext& context,
                     std::shared_ptr<const Attached> attached, const v1::PullRequest* pull,
                     v1::PullResponse* response, std::function<void(absl::Status)> done);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Attached> attached_ ABSL_GUARDED_BY(mu_);
  ReplicaForwarder* forwarder_ = nullptr;
  ShardMetrics* const metrics_;
  const absl::Duration max_wait_;
  SharedRegions regions_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
