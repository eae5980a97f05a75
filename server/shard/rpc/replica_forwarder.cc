#include "server/shard/rpc/replica_forwarder.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_util.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"

namespace cairn {
namespace {

// State shared by the copies of one forwarded push. `outstanding` counts the
// calls and one more for the slices: `done` runs when all are over.
struct Fanout {
  std::atomic<int> outstanding{0};
  absl::Mutex mu;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  std::function<void(absl::Status)> done;

  // One call over, or (`slices`) the last value slice let go. The latter
  // happens inside gRPC's transport when a call ended before the transport
  // finished writing (a deadline, a cancelled stream): `done` then runs on
  // a thread of its own, since it may go on to serve pulls.
  static void FinishOne(const std::shared_ptr<Fanout>& fanout, const absl::Status& s,
                        bool slices) {
    if (!s.ok()) {
      absl::MutexLock lock(&fanout->mu);
      if (fanout->first_error.ok()) fanout->first_error = s;
    }
    if (fanout->outstanding.fetch_sub(1) != 1) return;
    absl::Status result;
    {
      absl::MutexLock lock(&fanout->mu);
      result = fanout->first_error;
    }
    if (!slices) {
      fanout->done(result);
      return;
    }
    std::thread([fanout, result] { fanout->done(result); }).detach();
  }
};

// What the copies' value slices hold on to; once gRPC dropped the last of
// them, the memory they point at is no longer read.
struct SlicesHeld {
  std::shared_ptr<const PushPayload> copy;
  std::shared_ptr<const void> owner;
  std::shared_ptr<Fanout> fanout;
  ~SlicesHeld() { Fanout::FinishOne(fanout, absl::OkStatus(), /*slices=*/true); }
};

struct Call {
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
};

}  // namespace

ReplicaForwarder::ReplicaForwarder(CompletionLoop* loop, int64_t max_message_bytes,
                                   absl::Duration timeout, absl::Duration dead_after)
    : loop_(loop),
      max_message_bytes_(max_message_bytes),
      timeout_(timeout),
      dead_after_(dead_after) {}

grpc::GenericStub* ReplicaForwarder::StubFor(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto& stub = stubs_[address];
  if (stub == nullptr) {
    stub = std::make_unique<grpc::GenericStub>(
        MakeChannel(address, max_message_bytes_, dead_after_));
  }
  return stub.get();
}

std::shared_ptr<const PushPayload> ReplicaForwarder::Copy(
    const v1::PushRequest& request, absl::Span<const ValuePieces> values,
    uint64_t map_version) {
  auto copy = std::make_shared<PushPayload>();
  copy->header = request;
  copy->header.clear_tables();
  copy->header.set_forwarded(true);
  copy->header.clear_end_clock();  // a tick is for the server it was sent to
  copy->header.clear_pull();       // and so is a pull riding on the push
  copy->header.clear_server();     // one copy goes to every backup
  copy->header.set_map_version(map_version);
  copy->tables.resize(request.tables_size());
  for (int i = 0; i < request.tables_size(); ++i) {
    const v1::TableValues& tv = request.tables(i);
    PushTablePayload& t = copy->tables[i];
    t.meta = tv;
    t.meta.clear_values();
    t.meta.clear_shared();
    if (values.empty()) {
      PushPayload::AddRange(&t, absl::MakeConstSpan(tv.values().data(), tv.values().size()));
    } else {
      for (absl::Span<const char> piece : values[i]) PushPayload::AddRange(&t, piece);
    }
  }
  return copy;
}

void ReplicaForwarder::Forward(std::shared_ptr<const PushPayload> copy,
                               std::shared_ptr<const void> owner,
                               const std::vector<Shard::Replica>& to,
                               std::function<void(absl::Status)> done) {
  if (to.empty()) {
    done(absl::OkStatus());
    return;
  }
  auto fanout = std::make_shared<Fanout>();
  fanout->outstanding.store(static_cast<int>(to.size()) + 1);
  fanout->done = std::move(done);
  std::shared_ptr<void> held(new SlicesHeld{copy, std::move(owner), fanout});
  for (const Shard::Replica& r : to) {
    if (r.address.empty()) {
      Fanout::FinishOne(fanout,
                        absl::UnavailableError(absl::StrCat("backup server ", r.server_id,
                                                            " has no address in the map")),
                        /*slices=*/false);
      continue;
    }
    auto* call = new Call;
    call->request = SerializePush(*copy, held);
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    const uint32_t id = r.server_id;
    call->reader =
        StubFor(r.address)->PrepareUnaryCall(&call->context, kPushMethod, call->request,
                                             loop_->cq());
    call->reader->StartCall();
    call->reader->Finish(
        &call->response, &call->status,
        CompletionLoop::Once([call, fanout, id](bool) {
          const grpc::Status& s = call->status;
          absl::Status status = s.ok() ? absl::OkStatus()
                                       : Annotate(FromGrpcStatus(s),
                                                  absl::StrCat("replicate to backup server ", id));
          // A backup that is down, or refuses the copy because it follows a
          // newer map: not acknowledged; the worker refreshes its map and
          // retries.
          if (!status.ok()) status = absl::UnavailableError(status.message());
          delete call;  // drops this call's hold on the slices
          Fanout::FinishOne(fanout, status, /*slices=*/false);
        }));
  }
  held.reset();  // the slices hold the rest
}

}  // namespace cairn
