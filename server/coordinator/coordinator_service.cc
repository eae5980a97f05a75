#include "server/coordinator/coordinator_service.h"

#include <algorithm>

#include "common/status_conversion.h"

namespace cairn {
namespace {

void SetEnding(const CoordinatorState& state, v1::GetPartitionMapResponse* response) {
  auto [job_state, reason] = state.Ending();
  response->set_job_state(job_state);
  response->set_job_end_reason(std::move(reason));
}

}  // namespace

CoordinatorService::CoordinatorService(CoordinatorState* state, CoordinatorMetrics* metrics,
                                       CheckpointRegistry* registry, CheckpointDriver* driver)
    : state_(state), metrics_(metrics), registry_(registry), driver_(driver) {}

void CoordinatorService::Count(const char* method) {
  if (metrics_ != nullptr) metrics_->CountRequest(method);
}

grpc::Status CoordinatorService::RegisterServer(grpc::ServerContext*,
                                                const v1::RegisterServerRequest* request,
                                                v1::RegisterServerResponse* response) {
  Count("RegisterServer");
  auto registration = state_->RegisterServer(request->requested_id(), request->address(),
                                             request->metrics_address());
  if (!registration.ok()) return ToGrpcStatus(registration.status());
  response->set_server_id(registration->id);
  *response->mutable_job() = state_->job();
  *response->mutable_map() = std::move(registration->map);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::RegisterWorker(grpc::ServerContext*,
                                                const v1::RegisterWorkerRequest* request,
                                                v1::RegisterWorkerResponse* response) {
  Count("RegisterWorker");
  auto registration =
      state_->RegisterWorker(request->requested_id(), request->metrics_address());
  if (!registration.ok()) return ToGrpcStatus(registration.status());
  response->set_worker_id(registration->id);
  response->set_incarnation(registration->incarnation);
  *response->mutable_job() = state_->job();
  *response->mutable_map() = std::move(registration->map);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext*,
                                           const v1::HeartbeatRequest* request,
                                           v1::HeartbeatResponse* response) {
  Count("Heartbeat");
  auto result = state_->Heartbeat(request->role(), request->id(), request->clock(),
                                  request->map_version(), request->incarnation());
  if (!result.ok()) return ToGrpcStatus(result.status());
  response->set_lease_ms(absl::ToInt64Milliseconds(result->lease));
  response->set_map_version(result->map_version);
  response->set_job_state(result->job_state);
  response->set_job_done(result->job_state != v1::JOB_STATE_RUNNING);
  response->set_job_end_reason(result->job_end_reason);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetPartitionMap(grpc::ServerContext*,
                                                 const v1::GetPartitionMapRequest*,
                                                 v1::GetPartitionMapResponse* response) {
  Count("GetPartitionMap");
  *response->mutable_map() = state_->Map();
  *response->mutable_job() = state_->job();
  SetEnding(*state_, response);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::WatchPartitionMap(grpc::ServerContext*,
                                                   const v1::GetPartitionMapRequest* request,
                                                   v1::GetPartitionMapResponse* response) {
  Count("WatchPartitionMap");
  const absl::Duration wait =
      std::clamp(absl::Milliseconds(request->wait_ms()), absl::ZeroDuration(), kMaxWatchWait);
  *response->mutable_map() = state_->WaitForMap(request->known_version(), wait);
  *response->mutable_job() = state_->job();
  SetEnding(*state_, response);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Leave(grpc::ServerContext*, const v1::LeaveRequest* request,
                                       v1::LeaveResponse*) {
  Count("Leave");
  return ToGrpcStatus(state_->Leave(request->role(), request->id(), request->final_clock(),
                                    request->incarnation()));
}

grpc::Status CoordinatorService::ListMembers(grpc::ServerContext*,
                                             const v1::ListMembersRequest*,
                                             v1::ListMembersResponse* response) {
  Count("ListMembers");
  for (v1::Member& member : state_->Members()) *response->add_members() = std::move(member);
  *response->mutable_map() = state_->Map();
  return grpc::Status::OK;
}

namespace {
const grpc::Status kNoCheckpoints(grpc::StatusCode::FAILED_PRECONDITION,
                                  "checkpoints are off for this job: checkpoint.dir is not set");
}  // namespace

grpc::Status CoordinatorService::ReportCheckpoint(grpc::ServerContext*,
                                                  const v1::ReportCheckpointRequest* request,
                                                  v1::ReportCheckpointResponse* response) {
  Count("ReportCheckpoint");
  if (registry_ == nullptr) return kNoCheckpoints;
  absl::StatusOr<CheckpointRegistry::ReportResult> r = registry_->Report(*request);
  if (!r.ok()) return ToGrpcStatus(r.status());
  response->set_complete(r->complete);
  for (uint64_t id : r->keep_ids) response->add_keep_ids(id);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Checkpoint(grpc::ServerContext*,
                                            const v1::CheckpointRequest* request,
                                            v1::CheckpointResponse* response) {
  Count("Checkpoint");
  if (driver_ == nullptr) return kNoCheckpoints;
  const absl::Duration timeout =
      request->timeout_ms() > 0 ? absl::Milliseconds(request->timeout_ms()) : absl::Seconds(60);
  absl::StatusOr<CheckpointDriver::Result> r = driver_->Run(timeout);
  if (!r.ok()) return ToGrpcStatus(r.status());
  *response->mutable_record() = std::move(r->record);
  response->set_earlier(r->earlier);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListCheckpoints(grpc::ServerContext*,
                                                 const v1::ListCheckpointsRequest*,
                                                 v1::ListCheckpointsResponse* response) {
  Count("ListCheckpoints");
  if (registry_ == nullptr) return kNoCheckpoints;
  for (v1::CheckpointRecord& r : registry_->List()) *response->add_records() = std::move(r);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ReplicaReady(grpc::ServerContext*,
                                              const v1::ReplicaReadyRequest* request,
                                              v1::ReplicaReadyResponse* response) {
  Count("ReplicaReady");
  absl::StatusOr<uint64_t> version = state_->ReplicaReady(request->server_id(), request->group());
  if (!version.ok()) return ToGrpcStatus(version.status());
  response->set_map_version(*version);
  return grpc::Status::OK;
}

}  // namespace cairn
