#include "server/shard/rpc/replica_forwarder.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_util.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"

namespace cairn {
namespace {

// State shared by the copies of one forwarded push.
struct Fanout {
  std::atomic<int> outstanding{0};
  absl::Mutex mu;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  std::function<void(absl::Status)> done;
};

struct Copy {
  grpc::ClientContext context;
  v1::PushRequest request;
  v1::PushResponse response;
};

}  // namespace

ReplicaForwarder::ReplicaForwarder(int64_t max_message_bytes, absl::Duration timeout,
                                   absl::Duration dead_after)
    : max_message_bytes_(max_message_bytes), timeout_(timeout), dead_after_(dead_after) {}

v1::ParameterService::Stub* ReplicaForwarder::StubFor(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto& stub = stubs_[address];
  if (stub == nullptr) {
    stub = v1::ParameterService::NewStub(MakeChannel(address, max_message_bytes_, dead_after_));
  }
  return stub.get();
}

void ReplicaForwarder::Forward(const v1::PushRequest& request, uint64_t map_version,
                               const std::vector<Shard::Replica>& to,
                               std::function<void(absl::Status)> done) {
  if (to.empty()) {
    done(absl::OkStatus());
    return;
  }
  auto fanout = std::make_shared<Fanout>();
  fanout->outstanding.store(static_cast<int>(to.size()));
  fanout->done = std::move(done);
  auto finish_one = [fanout](absl::Status s) {
    if (!s.ok()) {
      absl::MutexLock lock(&fanout->mu);
      if (fanout->first_error.ok()) fanout->first_error = s;
    }
    if (fanout->outstanding.fetch_sub(1) == 1) {
      absl::Status result;
      {
        absl::MutexLock lock(&fanout->mu);
        result = fanout->first_error;
      }
      fanout->done(result);
    }
  };
  for (const Shard::Replica& r : to) {
    if (r.address.empty()) {
      finish_one(absl::UnavailableError(
          absl::StrCat("backup server ", r.server_id, " has no address in the map")));
      continue;
    }
    auto* copy = new Copy;
    copy->request = request;
    copy->request.set_forwarded(true);
    copy->request.clear_end_clock();  // a tick is for the server it was sent to
    copy->request.set_map_version(map_version);
    copy->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    const uint32_t id = r.server_id;
    StubFor(r.address)->async()->Push(
        &copy->context, &copy->request, &copy->response,
        [copy, finish_one, id](grpc::Status s) {
          absl::Status status = s.ok() ? absl::OkStatus()
                                       : Annotate(FromGrpcStatus(s),
                                                  absl::StrCat("replicate to backup server ", id));
          // A backup that is down, or refuses the copy because it follows a
          // newer map: not acknowledged; the worker refreshes its map and
          // retries.
          if (!status.ok()) status = absl::UnavailableError(status.message());
          delete copy;
          finish_one(status);
        });
  }
}

}  // namespace cairn
