#include "common/coordinator_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/backoff.h"
#include "common/completion_loop.h"
#include "common/grpc_util.h"
#include "common/security/transport_security.h"
#include "common/status_conversion.h"

namespace cairn {
namespace {

void SetDeadline(grpc::ClientContext* context, absl::Time deadline) {
  context->set_deadline(absl::ToChronoTime(deadline));
}

// One synchronous call of `method` on `stub` with `request`, ending by
// `deadline`: its response, or its status as an absl::Status.
template <typename Response, typename Request>
absl::StatusOr<Response> CallBy(
    v1::Coordinator::Stub* stub,
    grpc::Status (v1::Coordinator::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
    const Request& request, absl::Time deadline) {
  grpc::ClientContext context;
  SetDeadline(&context, deadline);
  Response response;
  grpc::Status s = (stub->*method)(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

template <typename Call>
auto WithRetry(const std::string& address, absl::Time deadline, Call call)
    -> decltype(call(deadline)) {
  constexpr Backoff kBackoff(absl::Milliseconds(100), absl::Seconds(2));
  const absl::Time start = absl::Now();
  absl::Status last;
  for (int attempt = 0;; ++attempt) {
    auto result = call(std::min(deadline, absl::Now() + absl::Seconds(5)));
    if (result.ok()) return result;
    last = result.status();
    const bool retry = last.code() == absl::StatusCode::kUnavailable ||
                       last.code() == absl::StatusCode::kDeadlineExceeded;
    if (!retry || absl::Now() + kBackoff.Delay(attempt) >= deadline) break;
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(kBackoff.Delay(attempt)));
  }
  if (last.code() == absl::StatusCode::kUnavailable ||
      last.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach the coordinator at ", address, " (tried for ",
                     absl::FormatDuration(
                         absl::Trunc(absl::Now() - start, absl::Milliseconds(100))),
                     "): ", last.message(),
                     // gRPC reports a refused handshake only as a closed
                     // connection on this side.
                     TransportSecurityInstalled()
                         ? "; with TLS on: does the coordinator run with TLS, and do this "
                           "process's CA file and certificate come from the job's CA? "
                           "(docs/security.md)"
                         : ""));
  }
  return last;
}

}  // namespace

CoordinatorClient::CoordinatorClient(const std::string& address, int64_t max_message_bytes,
                                     absl::Duration dead_after, WatchWait watch_wait)
    : address_(address),
      watch_wait_(watch_wait),
      stub_(v1::Coordinator::NewStub(MakeChannel(address, max_message_bytes, dead_after))) {}

CoordinatorClient::CoordinatorClient(const std::string& address, int64_t max_message_bytes,
                                     absl::Duration dead_after, CompletionLoop* watch_loop)
    : address_(address),
      watch_wait_(WatchWait::kCompletionLoop),
      watch_loop_(watch_loop),
      stub_(v1::Coordinator::NewStub(MakeChannel(address, max_message_bytes, dead_after))) {}

absl::StatusOr<v1::RegisterServerResponse> CoordinatorClient::RegisterServer(
    const v1::RegisterServerRequest& request, absl::Time deadline) {
  return WithRetry(address_, deadline, [&](absl::Time d) {
    return CallBy(stub_.get(), &v1::Coordinator::Stub::RegisterServer, request, d);
  });
}

absl::StatusOr<v1::RegisterWorkerResponse> CoordinatorClient::RegisterWorker(
    const v1::RegisterWorkerRequest& request, absl::Time deadline) {
  return WithRetry(address_, deadline, [&](absl::Time d) {
    return CallBy(stub_.get(), &v1::Coordinator::Stub::RegisterWorker, request, d);
  });
}

absl::StatusOr<v1::HeartbeatResponse> CoordinatorClient::Heartbeat(
    const v1::HeartbeatRequest& request, absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::Heartbeat, request, absl::Now() + timeout);
}

absl::StatusOr<v1::GetPartitionMapResponse> CoordinatorClient::GetPartitionMap(
    absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::GetPartitionMap, v1::GetPartitionMapRequest(),
                absl::Now() + timeout);
}

absl::StatusOr<v1::GetPartitionMapResponse> CoordinatorClient::WatchPartitionMap(
    uint64_t known_version, absl::Duration wait) {
  grpc::ClientContext context;
  SetDeadline(&context, absl::Now() + wait + absl::Seconds(5));
  v1::GetPartitionMapRequest request;
  request.set_known_version(known_version);
  request.set_wait_ms(absl::ToInt64Milliseconds(wait));
  v1::GetPartitionMapResponse response;
  // kCompletionLoop without a loop (the first constructor) waits as
  // kCallingThread does.
  if (watch_wait_ == WatchWait::kCallingThread ||
      (watch_wait_ == WatchWait::kCompletionLoop && watch_loop_ == nullptr)) {
    const grpc::Status status = stub_->WatchPartitionMap(&context, request, &response);
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }
  grpc::Status status;
  absl::Notification done;
  if (watch_wait_ == WatchWait::kCompletionLoop) {
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::GetPartitionMapResponse>> reader =
        stub_->PrepareAsyncWatchPartitionMap(&context, request, watch_loop_->cq());
    reader->StartCall();
    reader->Finish(&response, &status, CompletionLoop::Once([&](bool) { done.Notify(); }));
    done.WaitForNotification();
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }
  // Through the callback API, waited for on a notification: a thread
  // blocked in a synchronous call polls the event set that every channel
  // and server of the process shares, and this call is nearly always in
  // flight. Such a thread reads pushes and pulls off the data path's
  // sockets and then wakes the thread that handles them, a hand-off more
  // on each call it happens to read. The other calls stay synchronous:
  // they are short, and a heartbeat must not wait for gRPC's callback
  // threads, which a long handler (a checkpoint's snapshot) may hold.
  stub_->async()->WatchPartitionMap(&context, &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::Status CoordinatorClient::Leave(const v1::LeaveRequest& request, absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::Leave, request, absl::Now() + timeout)
      .status();
}

absl::StatusOr<v1::ListMembersResponse> CoordinatorClient::ListMembers(absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::ListMembers, v1::ListMembersRequest(),
                absl::Now() + timeout);
}

absl::StatusOr<v1::ReportCheckpointResponse> CoordinatorClient::ReportCheckpoint(
    const v1::ReportCheckpointRequest& request, absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::ReportCheckpoint, request,
                absl::Now() + timeout);
}

absl::StatusOr<v1::CheckpointResponse> CoordinatorClient::Checkpoint(
    const v1::CheckpointRequest& request, absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::Checkpoint, request, absl::Now() + timeout);
}

absl::StatusOr<v1::ListCheckpointsResponse> CoordinatorClient::ListCheckpoints(
    absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::ListCheckpoints, v1::ListCheckpointsRequest(),
                absl::Now() + timeout);
}

absl::StatusOr<v1::ReplicaReadyResponse> CoordinatorClient::ReplicaReady(
    const v1::ReplicaReadyRequest& request, absl::Duration timeout) {
  return CallBy(stub_.get(), &v1::Coordinator::Stub::ReplicaReady, request, absl::Now() + timeout);
}

}  // namespace cairn
