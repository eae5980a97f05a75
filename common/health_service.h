// grpc.health.v1 (proto/grpc/health/v1/health.proto) on gRPC's asynchronous
// API, served on a CompletionLoop: what Kubernetes' grpc probes and
// grpc_health_probe ask. gRPC's own health service runs on its callback API,
// which would start gRPC's callback threads in a process that serves
// everything from one loop (common/completion_loop.h).
//
// One status for the whole server: "" and every service name it was given
// answer it; any other name gets NOT_FOUND from Check and SERVICE_UNKNOWN
// from Watch.
#ifndef CAIRN_COMMON_HEALTH_SERVICE_H_
#define CAIRN_COMMON_HEALTH_SERVICE_H_

#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/async_unary_call.h"
#include "common/completion_loop.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace cairn {

using AsyncHealthService = grpc::health::v1::Health::WithAsyncMethod_Check<
    grpc::health::v1::Health::WithAsyncMethod_Watch<grpc::health::v1::Health::Service>>;

// Thread-safe.
class HealthService final : public AsyncHealthService {
 public:
  // `services`: the full names of the services the server serves
  // ("cairn.v1.ParameterService"). Starts NOT_SERVING.
  explicit HealthService(std::vector<std::string> services);

  // Serves Check and Watch on `loop` (its server_cq, of the server this
  // service is registered with) until the server shuts down. Call once,
  // after the server started.
  void Serve(CompletionLoop* loop);

  // The status every Check answers from now on; each Watch in flight gets
  // it as its next message when it differs from the last one it got.
  void SetServing(bool serving) ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels every Watch in flight (their callers see CANCELLED), so that a
  // server shutting down need not wait for them to end. A Watch that
  // arrives later is served as usual.
  void CancelWatches() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class WatchCall;
  friend class WatchCall;
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;
  using CheckCall = AsyncUnaryCall<HealthService, grpc::health::v1::HealthCheckRequest,
                                   grpc::health::v1::HealthCheckResponse>;

  void ServeCheck(CheckCall* call) ABSL_LOCKS_EXCLUDED(mu_);
  // What `service` has now.
  Status StatusOf(const std::string& service) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void ListenWatch(grpc::ServerCompletionQueue* cq);

  const std::set<std::string> services_;
  const CheckCall::Handler check_handler_;
  mutable absl::Mutex mu_;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  std::set<WatchCall*> watches_ ABSL_GUARDED_BY(mu_);
  grpc::ServerCompletionQueue* cq_ = nullptr;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_HEALTH_SERVICE_H_
