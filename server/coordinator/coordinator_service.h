// The cairn.v1.Coordinator gRPC service: thin handlers over CoordinatorState.
// Control plane, so the synchronous API: WatchPartitionMap parks one server
// thread for at most kMaxWatchWait.
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_

#include "absl/time/time.h"
#include "cairn/v1/coordinator.grpc.pb.h"
#include "server/coordinator/checkpoint_driver.h"
#include "server/coordinator/checkpoint_registry.h"
#include "server/coordinator/coordinator_metrics.h"
#include "server/coordinator/coordinator_state.h"

namespace cairn {

// The longest WatchPartitionMap waits, whatever wait_ms asks for.
inline constexpr absl::Duration kMaxWatchWait = absl::Seconds(10);

// Thread-safe (CoordinatorState is). Errors are CoordinatorState's, as gRPC
// codes: RegisterServer/RegisterWorker INVALID_ARGUMENT, ALREADY_EXISTS,
// UNAVAILABLE (a restarted coordinator waits for its members to re-attach;
// retry); Heartbeat NOT_FOUND (register again); Leave NOT_FOUND.
class CoordinatorService final : public v1::Coordinator::Service {
 public:
  // state must outlive this; metrics, registry and driver may be null (a job
  // without checkpoint.dir: the checkpoint calls answer FAILED_PRECONDITION),
  // else must outlive this.
  CoordinatorService(CoordinatorState* state, CoordinatorMetrics* metrics,
                     CheckpointRegistry* registry = nullptr, CheckpointDriver* driver = nullptr);

  grpc::Status RegisterServer(grpc::ServerContext* context,
                              const v1::RegisterServerRequest* request,
                              v1::RegisterServerResponse* response) override;
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  // Renews the lease; answers lease_ms and the current map version.
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  // The current map and job, at once.
  grpc::Status GetPartitionMap(grpc::ServerContext* context,
                               const v1::GetPartitionMapRequest* request,
                               v1::GetPartitionMapResponse* response) override;
  // The map once its version exceeds known_version, or after
  // min(wait_ms, kMaxWatchWait) (negative wait_ms: 0), or when the coordinator
  // shuts down; the reply's version tells which.
  grpc::Status WatchPartitionMap(grpc::ServerContext* context,
                                 const v1::GetPartitionMapRequest* request,
                                 v1::GetPartitionMapResponse* response) override;
  grpc::Status Leave(grpc::ServerContext* context, const v1::LeaveRequest* request,
                     v1::LeaveResponse* response) override;
  // Every member ever registered, with lease ages, and the current map.
  grpc::Status ListMembers(grpc::ServerContext* context, const v1::ListMembersRequest* request,
                           v1::ListMembersResponse* response) override;
  // A server's part of a checkpoint (CheckpointRegistry::Report).
  grpc::Status ReportCheckpoint(grpc::ServerContext* context,
                                const v1::ReportCheckpointRequest* request,
                                v1::ReportCheckpointResponse* response) override;
  // Takes a checkpoint now and answers its record once complete
  // (CheckpointDriver::Run; timeout_ms 0: 60 s).
  grpc::Status Checkpoint(grpc::ServerContext* context, const v1::CheckpointRequest* request,
                          v1::CheckpointResponse* response) override;
  // A joining server caught up with a replica group (CoordinatorState::ReplicaReady).
  grpc::Status ReplicaReady(grpc::ServerContext* context, const v1::ReplicaReadyRequest* request,
                            v1::ReplicaReadyResponse* response) override;
  grpc::Status ListCheckpoints(grpc::ServerContext* context,
                               const v1::ListCheckpointsRequest* request,
                               v1::ListCheckpointsResponse* response) override;

 private:
  void Count(const char* method);

  // Constant after construction; borrowed.
  CoordinatorState* const state_;
  CoordinatorMetrics* const metrics_;
  CheckpointRegistry* const registry_;
  CheckpointDriver* const driver_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_
