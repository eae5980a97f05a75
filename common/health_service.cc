#include "common/health_service.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "common/async_unary_call.h"

namespace cairn {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Watch: its first message, then one per change of the status, one
// write in flight at a time. Two tags: the write's, and the end of the call
// (the caller cancelled it, or the server is shutting down); the call is
// deleted once both the end came and no write is in flight.
class HealthService::WatchCall {
 public:
  WatchCall(HealthService* health, grpc::ServerCompletionQueue* cq)
      : health_(health), writer_(&context_) {
    context_.AsyncNotifyWhenDone(&ended_);
    health_->RequestWatch(&context_, &request_, &writer_, cq, cq, &arrived_);
  }

  // With the service's mutex (`held`) held: writes `status` unless a write
  // is in flight (then it goes out when that one is done) or it was the
  // last one sent.
  void Send(Status status, const absl::Mutex& held) ABSL_EXCLUSIVE_LOCKS_REQUIRED(held) {
    wanted_ = status;
    if (writing_ || ended_.fired || (sent_any_ && sent_ == status)) return;
    writing_ = true;
    sent_any_ = true;
    sent_ = status;
    message_.set_status(status);
    writer_.Write(message_, &written_);
  }

  const std::string& service() const { return request_.service(); }
  // Thread-safe (ServerContext::TryCancel); its end's tag then comes.
  void Cancel() { context_.TryCancel(); }

 private:
  // One of the call's three operations; `fired` once it completed (under
  // the service's mutex).
  struct Step final : CompletionLoop::Tag {
    Step(WatchCall* c, void (WatchCall::*f)(bool)) : call(c), proceed(f) {}
    void Proceed(bool ok) override { (call->*proceed)(ok); }
    WatchCall* call;
    void (WatchCall::*proceed)(bool);
    bool fired = false;
  };

  void Arrived(bool ok) {
    if (!ok) {  // the server is shutting down: no call came, and then
      delete this;  // gRPC never delivers the end's tag either
      return;
    }
    health_->ListenWatch(health_->cq_);
    absl::MutexLock lock(&health_->mu_);
    arrived_.fired = true;
    if (ended_.fired) {  // its end came first
      MaybeDeleteLocked();
      return;
    }
    health_->watches_.insert(this);
    Send(health_->StatusOf(request_.service()), health_->mu_);
  }

  void Written(bool ok) {
    absl::MutexLock lock(&health_->mu_);
    writing_ = false;
    if (ok && !ended_.fired && wanted_ != sent_) Send(wanted_, health_->mu_);
    MaybeDeleteLocked();
  }

  void Ended(bool) {
    absl::MutexLock lock(&health_->mu_);
    ended_.fired = true;
    health_->watches_.erase(this);
    MaybeDeleteLocked();
  }

  // Deleting the call leaves the service's mutex, which its caller holds, alone.
  void MaybeDeleteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_->mu_) {
    if (arrived_.fired && ended_.fired && !writing_) delete this;
  }

  HealthService* const health_;
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  HealthCheckResponse message_;
  Step arrived_{this, &WatchCall::Arrived};
  Step written_{this, &WatchCall::Written};
  Step ended_{this, &WatchCall::Ended};
  // Under the service's mutex.
  bool writing_ = false;
  bool sent_any_ = false;
  Status sent_ = HealthCheckResponse::UNKNOWN;
  Status wanted_ = HealthCheckResponse::UNKNOWN;
};

HealthService::HealthService(std::vector<std::string> services)
    : services_(services.begin(), services.end()),
      check_handler_([this](CheckCall* call) { ServeCheck(call); }) {}

HealthService::Status HealthService::StatusOf(const std::string& service) const {
  if (!service.empty() && services_.count(service) == 0) return HealthCheckResponse::SERVICE_UNKNOWN;
  return serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

void HealthService::Serve(CompletionLoop* loop) {
  cq_ = loop->server_cq();
  CheckCall::Listen(this, &HealthService::RequestCheck, cq_, &check_handler_);
  ListenWatch(cq_);
}

void HealthService::ServeCheck(CheckCall* call) {
  Status status;
  {
    absl::ReaderMutexLock lock(&mu_);
    status = StatusOf(call->request().service());
  }
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    call->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                              "grpc.health.v1: this server does not serve '" +
                                  call->request().service() + "'"));
    return;
  }
  call->response()->set_status(status);
  call->Finish(grpc::Status::OK);
}

void HealthService::ListenWatch(grpc::ServerCompletionQueue* cq) { new WatchCall(this, cq); }

void HealthService::CancelWatches() {
  absl::MutexLock lock(&mu_);
  for (WatchCall* watch : watches_) watch->Cancel();
}

void HealthService::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  serving_ = serving;
  for (WatchCall* watch : watches_) watch->Send(StatusOf(watch->service()), mu_);
}

}  // namespace cairn
