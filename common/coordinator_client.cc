#include "common/coordinator_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/backoff.h"
#include "common/grpc_util.h"
#include "common/status_conversion.h"

namespace cairn {
namespace {

using Async = v1::Coordinator::StubInterface::async_interface;

// One call through gRPC's callback API, waited for on a notification. A
// thread blocked in a synchronous call polls gRPC's event set, which every
// channel and server of the process shares: it reads the data path's
// sockets for the threads that wait for those bytes and then wakes them, a
// hand-off more on every push and pull it happens to read. Waiting here
// instead keeps the control plane's calls (the map watch is always in
// flight) out of the data path's polling.
template <typename Request, typename Response>
absl::StatusOr<Response> CallAndWait(
    v1::Coordinator::Stub* stub,
    void (Async::*method)(grpc::ClientContext*, const Request*, Response*,
                          std::function<void(grpc::Status)>),
    const Request& request, absl::Time deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  Response response;
  grpc::Status status;
  absl::Notification done;
  (stub->async()->*method)(&context, &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

template <typename Call>
auto WithRetry(const std::string& address, absl::Time deadline, Call call)
    -> decltype(call(deadline)) {
  constexpr Backoff kBackoff(absl::Milliseconds(100), absl::Seconds(2));
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
        absl::StrCat("cannot reach the coordinator at ", address, ": ", last.message()));
  }
  return last;
}

}  // namespace

CoordinatorClient::CoordinatorClient(const std::string& address, int64_t max_message_bytes,
                                     absl::Duration dead_after)
    : address_(address),
      stub_(v1::Coordinator::NewStub(MakeChannel(address, max_message_bytes, dead_after))) {}

absl::StatusOr<v1::RegisterServerResponse> CoordinatorClient::RegisterServer(
    const v1::RegisterServerRequest& request, absl::Time deadline) {
  return WithRetry(address_, deadline,
                   [&](absl::Time d) -> absl::StatusOr<v1::RegisterServerResponse> {
                     return CallAndWait(stub_.get(), &Async::RegisterServer, request, d);
                   });
}

absl::StatusOr<v1::RegisterWorkerResponse> CoordinatorClient::RegisterWorker(
    const v1::RegisterWorkerRequest& request, absl::Time deadline) {
  return WithRetry(address_, deadline,
                   [&](absl::Time d) -> absl::StatusOr<v1::RegisterWorkerResponse> {
                     return CallAndWait(stub_.get(), &Async::RegisterWorker, request, d);
                   });
}

absl::StatusOr<v1::HeartbeatResponse> CoordinatorClient::Heartbeat(
    const v1::HeartbeatRequest& request, absl::Duration timeout) {
  return CallAndWait(stub_.get(), &Async::Heartbeat, request, absl::Now() + timeout);
}

absl::StatusOr<v1::GetPartitionMapResponse> CoordinatorClient::GetPartitionMap(
    absl::Duration timeout) {
  const v1::GetPartitionMapRequest request;
  return CallAndWait(stub_.get(), &Async::GetPartitionMap, request, absl::Now() + timeout);
}

absl::StatusOr<v1::GetPartitionMapResponse> CoordinatorClient::WatchPartitionMap(
    uint64_t known_version, absl::Duration wait) {
  v1::GetPartitionMapRequest request;
  request.set_known_version(known_version);
  request.set_wait_ms(absl::ToInt64Milliseconds(wait));
  return CallAndWait(stub_.get(), &Async::WatchPartitionMap, request,
                     absl::Now() + wait + absl::Seconds(5));
}

absl::Status CoordinatorClient::Leave(const v1::LeaveRequest& request, absl::Duration timeout) {
  return CallAndWait(stub_.get(), &Async::Leave, request, absl::Now() + timeout).status();
}

absl::StatusOr<v1::ListMembersResponse> CoordinatorClient::ListMembers(absl::Duration timeout) {
  const v1::ListMembersRequest request;
  return CallAndWait(stub_.get(), &Async::ListMembers, request, absl::Now() + timeout);
}

absl::StatusOr<v1::ReportCheckpointResponse> CoordinatorClient::ReportCheckpoint(
    const v1::ReportCheckpointRequest& request, absl::Duration timeout) {
  return CallAndWait(stub_.get(), &Async::ReportCheckpoint, request, absl::Now() + timeout);
}

absl::StatusOr<v1::CheckpointResponse> CoordinatorClient::Checkpoint(
    const v1::CheckpointRequest& request, absl::Duration timeout) {
  return CallAndWait(stub_.get(), &Async::Checkpoint, request, absl::Now() + timeout);
}

absl::StatusOr<v1::ListCheckpointsResponse> CoordinatorClient::ListCheckpoints(
    absl::Duration timeout) {
  const v1::ListCheckpointsRequest request;
  return CallAndWait(stub_.get(), &Async::ListCheckpoints, request, absl::Now() + timeout);
}

absl::StatusOr<v1::ReplicaReadyResponse> CoordinatorClient::ReplicaReady(
    const v1::ReplicaReadyRequest& request, absl::Duration timeout) {
  return CallAndWait(stub_.get(), &Async::ReplicaReady, request, absl::Now() + timeout);
}

}  // namespace cairn
