// The gRPC ParameterService of cairn-server (callback API). Handlers only
// convert messages and statuses; a pull that must wait parks its reactor and
// is finished by the thread that releases it (Shard::Pull's callback), so no
// gRPC thread blocks on a barrier.
#ifndef CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
#define CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_

#include <atomic>
#include <functional>

#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"

namespace cairn {

class ReplicaForwarder;
class Shard;
class ShardMetrics;

// Thread-safe. `shard` and `metrics` (may be null) must outlive the service.
class ParameterService final : public v1::ParameterService::CallbackService {
 public:
  // `max_wait` caps a pull's wait when the caller set no earlier deadline.
  // Until SetShard() is called every request gets UNAVAILABLE (the server
  // listens before it has registered and learned the job).
  ParameterService(ShardMetrics* metrics, absl::Duration max_wait);

  // `shard` must outlive the service. Call once.
  void SetShard(Shard* shard) { shard_.store(shard, std::memory_order_release); }
  // Replication of pushes to backups; `forwarder` must outlive the service.
  // Without one (or a replication factor of 1) pushes are acknowledged once
  // applied here. Call before serving.
  void SetForwarder(ReplicaForwarder* forwarder) { forwarder_ = forwarder; }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context,
                                 const v1::PullRequest* request,
                                 v1::PullResponse* response) override;
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
  // A chunk of a replica group's state from its primary (Shard::ReceiveReplica).
  grpc::ServerUnaryReactor* Replicate(grpc::CallbackServerContext* context,
                                      const v1::ReplicaChunk* request,
                                      v1::ReplicaChunkResponse* response) override;
  // Called (on a gRPC thread; it must only queue) once this server holds a
  // group it joins. Call before serving.
  void SetOnReplicaInstalled(std::function<void(uint32_t group)> f) {
    on_replica_installed_ = std::move(f);
  }

 private:
  std::atomic<Shard*> shard_{nullptr};
  ReplicaForwarder* forwarder_ = nullptr;
  std::function<void(uint32_t)> on_replica_installed_;
  ShardMetrics* const metrics_;
  const absl::Duration max_wait_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_PARAMETER_SERVICE_H_
