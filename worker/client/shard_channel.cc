#include "worker/client/shard_channel.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/push_payload.h"
#include "common/shared_region.h"
#include "common/status_conversion.h"
#include "worker/client/call_queue.h"
#include "worker/client/shared_arena.h"

namespace cairn {
namespace {

// Requests with fewer value bytes than this go inline: for them the region
// saves less than its bookkeeping costs.
constexpr uint64_t kMinSharedBytes = 4096;

// A call started on a completion queue (a waiting caller's, or the
// channels' CallQueue): what the queue fills in, and what runs when the
// call is taken off it.
class QueuedCall final : public CqTag {
 public:
  explicit QueuedCall(ShardChannel::Done finish) : finish_(std::move(finish)) {}

  // Starts the call of `reader` (kept until the call completes) and asks
  // for its end, the answer read into `answer`. The call may complete, and
  // delete this, on the queue's thread at once: nothing may touch it after.
  template <typename Reader, typename Answer>
  void Start(std::unique_ptr<Reader> reader, Answer* answer) {
    Reader* started = reader.get();
    // Held without a second allocation (a shared_ptr's control block) per call.
    reader_ = Held(reader.release(), [](void* held) { delete static_cast<Reader*>(held); });
    started->StartCall();
    started->Finish(answer, &status_, this);
  }

  // `ok` is always true for a unary call's Finish.
  void Complete(bool /*ok*/) override {
    // The reader lives in the call's arena, which `finish_` may end (with
    // the call's context): it goes first. Finish filled in what it read.
    reader_.reset();
    finish_(std::move(status_));
    delete this;
  }

 private:
  using Held = std::unique_ptr<void, void (*)(void*)>;

  ShardChannel::Done finish_;
  grpc::Status status_;
  Held reader_{nullptr, [](void*) {}};
};

// The answers of pulls through gRPC whose `done` is running, by the
// response they were read into: where PulledValues finds their values.
class ReceivedPulls {
 public:
  void Add(const v1::PullResponse* response, const ReceivedPull* received)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    by_response_[response] = received;
  }
  void Remove(const v1::PullResponse* response) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    by_response_.erase(response);
  }
  // Null when `response` was not read from gRPC's bytes by this channel.
  const ReceivedPull* Find(const v1::PullResponse* response) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = by_response_.find(response);
    return it == by_response_.end() ? nullptr : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const v1::PullResponse*, const ReceivedPull*> by_response_
      ABSL_GUARDED_BY(mu_);
};

// A region the server accepted, and the space in it.
struct SharedLink {
  std::shared_ptr<SharedRegion> region;
  uint64_t id = 0;  // the server's name for it (OpenRegionResponse.region)
  SharedArena arena;

  SharedLink(std::shared_ptr<SharedRegion> r, uint64_t i)
      : region(std::move(r)), id(i), arena(SharedRegion::kHeaderBytes, region->size()) {}
};

class GrpcShardChannel final : public ShardChannel {
 public:
  GrpcShardChannel(const std::string& address, const ShardChannelOptions& options,
                   std::shared_ptr<CallQueue> calls)
      : address_(address),
        counters_(options.counters),
        calls_(std::move(calls)),
        channel_(MakeChannel(address, options.max_message_bytes, options.dead_after)),
        stub_(v1::ParameterService::NewStub(channel_)),
        raw_(channel_) {
    if (options.shared_memory_bytes > 0) OfferRegion(options);
  }

  void Push(grpc::ClientContext* context, const std::shared_ptr<const PushPayload>& payload,
            std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
            grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    const std::optional<uint64_t> at = ReserveValues(link.get(), *payload);
    StartPush(context, payload, std::move(pin), response, std::move(done), cq, link, at,
              /*rider=*/nullptr);
  }

  void PushAndPull(grpc::ClientContext* context,
                   const std::shared_ptr<const PushPayload>& payload, std::shared_ptr<void> pin,
                   v1::PushResponse* response, Done push_done, grpc::ClientContext* pull_context,
                   v1::PullRequest* pull, uint64_t reply_bytes, v1::PullResponse* pull_response,
                   Done pull_done, grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    const std::optional<uint64_t> at = ReserveValues(link.get(), *payload);
    // The pull rides only where both its answer and the push's values go
    // through the region: inline, the answer would be copied into the
    // PushResponse.
    std::optional<uint64_t> reply_at;
    if (at.has_value() && reply_bytes >= kMinSharedBytes) {
      reply_at = link->arena.Allocate(reply_bytes);
      if (!reply_at.has_value()) NoteFull(*link, reply_bytes);
    }
    if (!reply_at.has_value()) {
      StartPush(context, payload, std::move(pin), response, std::move(push_done), cq, link, at,
                /*rider=*/nullptr);
      Pull(pull_context, pull, reply_bytes, pull_response, std::move(pull_done), cq);
      return;
    }
    v1::SharedRange* range = pull->mutable_reply_to();
    range->set_region(link->id);
    range->set_offset(*reply_at);
    range->set_length(reply_bytes);
    Done both = [this, link, reply_at = *reply_at, response, pull_context, pull, reply_bytes,
                 pull_response, push_done = std::move(push_done),
                 pull_done = std::move(pull_done), cq](grpc::Status status) mutable {
      const bool served = status.ok() && response->has_pull();
      if (served) {
        *pull_response = std::move(*response->mutable_pull());
        response->clear_pull();
      }
      push_done(status);
      if (served) {
        uint64_t bytes = 0;
        for (const v1::TableValues& t : pull_response->tables()) bytes += t.shared().length();
        if (bytes > 0) Count(counters_.get(), bytes);
        if (counters_ != nullptr) {
          counters_->pulls_with_push.fetch_add(1, std::memory_order_relaxed);
        }
        pull_done(grpc::Status::OK);
        Release(*link, reply_at, true);
        return;
      }
      // Not served with the push: the pull goes on its own. A server may
      // still write into the range of a call that failed.
      Release(*link, reply_at, status.ok());
      pull->clear_reply_to();
      Pull(pull_context, pull, reply_bytes, pull_response, std::move(pull_done), cq);
    };
    StartPush(context, payload, std::move(pin), response, std::move(both), cq, link, at, pull);
  }

  void Pull(grpc::ClientContext* context, v1::PullRequest* request, uint64_t reply_bytes,
            v1::PullResponse* response, Done done, grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    std::optional<uint64_t> at;
    if (link != nullptr && reply_bytes >= kMinSharedBytes) {
      at = link->arena.Allocate(reply_bytes);
      if (!at.has_value()) NoteFull(*link, reply_bytes);
    }
    if (at.has_value()) {
      v1::SharedRange* range = request->mutable_reply_to();
      range->set_region(link->id);
      range->set_offset(*at);
      range->set_length(reply_bytes);
    } else {
      request->clear_reply_to();
    }
    // The request through the generic stub, so that the answer's values
    // are read from the slices gRPC received them in (pull_reply_reader.h).
    auto request_bytes = std::make_shared<grpc::ByteBuffer>();
    bool own = false;
    grpc::Status serialized =
        grpc::SerializationTraits<v1::PullRequest>::Serialize(*request, request_bytes.get(), &own);
    if (!serialized.ok()) {
      // Only a request past protobuf's 2 GiB limit; the call ends CANCELLED
      // the usual way, on the thread its `done` is promised to.
      LOG_ERROR("a pull to server {} cannot be serialized: {}", address_,
                serialized.error_message());
      context->TryCancel();
    }
    auto reply = std::make_shared<ReceivedPull>();
    Done finish = [counters = counters_, received = received_, response, link, at, request_bytes,
                   reply, done = std::move(done)](grpc::Status status) {
      if (status.ok()) {
        if (absl::Status read = reply->Read(response); !read.ok()) status = ToGrpcStatus(read);
      }
      if (at.has_value() && status.ok()) {
        uint64_t bytes = 0;
        for (const v1::TableValues& t : response->tables()) bytes += t.shared().length();
        if (bytes > 0) Count(counters.get(), bytes);
      }
      if (status.ok()) received->Add(response, reply.get());
      done(status);
      if (status.ok()) received->Remove(response);
      // The server may still write into a failed call's range.
      if (at.has_value()) Release(*link, *at, status.ok());
    };
    StartRaw(context, kPullMethod, *request_bytes, reply->bytes(), std::move(finish), cq);
  }

  void Clock(grpc::ClientContext* context, const v1::ClockRequest* request,
             v1::ClockResponse* response, Done done) override {
    (new QueuedCall(std::move(done)))
        ->Start(stub_->PrepareAsyncClock(context, *request, calls_->Begin()), response);
  }

  bool SharesMemory() const override { return link() != nullptr; }

  absl::StatusOr<ValuePieces> PulledValues(const v1::PullResponse& response,
                                           int table) const override {
    const v1::TableValues& values = response.tables(table);
    if (!values.has_shared()) {
      if (const ReceivedPull* received = received_->Find(&response); received != nullptr) {
        return received->values(table);
      }
      return ShardChannel::PulledValues(response, table);
    }
    std::shared_ptr<SharedLink> link = this->link();
    const v1::SharedRange& r = values.shared();
    if (link == nullptr || r.region() != link->id) {
      return absl::InternalError(absl::StrCat("server ", address_, " answered in shared region ",
                                              r.region(), ", which this worker did not offer"));
    }
    absl::StatusOr<absl::Span<char>> span = link->region->Range(r.offset(), r.length());
    if (!span.ok()) return absl::InternalError(span.status().message());
    return ValuePieces{absl::Span<const char>(span->data(), span->size())};
  }

 private:
  // Room in the region for a push's values, when they go through it.
  std::optional<uint64_t> ReserveValues(SharedLink* link, const PushPayload& payload) {
    uint64_t value_bytes = 0;
    for (const PushTablePayload& t : payload.tables) value_bytes += t.value_bytes();
    if (link == nullptr || value_bytes < kMinSharedBytes) return std::nullopt;
    std::optional<uint64_t> at = link->arena.Allocate(value_bytes);
    if (!at.has_value()) NoteFull(*link, value_bytes);
    return at;
  }

  // Starts a push, its values at `at` of the region (reserved by
  // ReserveValues) or, without it, as slices of the caller's memory.
  // `rider` (only with `at`): the pull the request carries
  // (PushRequest.pull).
  void StartPush(grpc::ClientContext* context, const std::shared_ptr<const PushPayload>& payload,
                 std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
                 grpc::CompletionQueue* cq, const std::shared_ptr<SharedLink>& link,
                 std::optional<uint64_t> at, const v1::PullRequest* rider) {
    auto request = std::make_shared<grpc::ByteBuffer>();
    if (!at.has_value()) {
      // Values as slices of the caller's memory; gRPC releases `pin`.
      *request = SerializePush(*payload, pin);
    } else {
      // Values copied into the region; the caller's memory is free again
      // once this returns.
      v1::PushRequest header = payload->header;
      if (rider != nullptr) *header.mutable_pull() = *rider;
      uint64_t value_bytes = 0;
      uint64_t offset = *at;
      for (const PushTablePayload& t : payload->tables) {
        v1::TableValues* tv = header.add_tables();
        *tv = t.meta;
        const uint64_t begin = offset;
        for (absl::Span<const char> r : t.values) {
          std::memcpy(link->region->data() + offset, r.data(), r.size());
          offset += r.size();
        }
        v1::SharedRange* range = tv->mutable_shared();
        range->set_region(link->id);
        range->set_offset(begin);
        range->set_length(offset - begin);
        value_bytes += offset - begin;
      }
      pin.reset();
      bool own = false;
      grpc::SerializationTraits<v1::PushRequest>::Serialize(header, request.get(), &own);
      Count(counters_.get(), value_bytes);
    }
    auto reply = std::make_shared<grpc::ByteBuffer>();
    Done finish = [request, reply, response, link, at, done = std::move(done)](grpc::Status status) {
      if (status.ok() &&
          !grpc::SerializationTraits<v1::PushResponse>::Deserialize(reply.get(), response).ok()) {
        status = grpc::Status(grpc::StatusCode::INTERNAL, "cannot parse the server's PushResponse");
      }
      if (at.has_value()) Release(*link, *at, status.ok());
      done(std::move(status));
    };
    StartRaw(context, kPushMethod, *request, reply.get(), std::move(finish), cq);
  }

  // Starts a call of `method` through the generic stub on `cq`, or on the
  // channels' own queue when it is null; `reply` is filled in before
  // `finish` runs.
  void StartRaw(grpc::ClientContext* context, const std::string& method,
                const grpc::ByteBuffer& request, grpc::ByteBuffer* reply, Done finish,
                grpc::CompletionQueue* cq) {
    (new QueuedCall(std::move(finish)))
        ->Start(raw_.PrepareUnaryCall(context, method, request,
                                      cq != nullptr ? cq : calls_->Begin()),
                reply);
  }

  // A successful call's range is free again; a failed one's is kept from
  // reuse (shared_arena.h).
  static void Release(SharedLink& link, uint64_t offset, bool ok) {
    if (ok) {
      link.arena.Free(offset);
    } else {
      link.arena.Quarantine(offset);
    }
  }

  static void Count(SharedMemoryCounters* counters, uint64_t bytes) {
    if (counters == nullptr) return;
    counters->requests.fetch_add(1, std::memory_order_relaxed);
    counters->bytes.fetch_add(bytes, std::memory_order_relaxed);
  }

  // Logged once per channel.
  void NoteFull(const SharedLink& link, uint64_t bytes) {
    if (full_noted_.exchange(true)) return;
    LOG_INFO("a request's {} value bytes do not fit in the shared region with server {} ({} of "
             "{} bytes in use, {} kept from reuse after failed calls): such requests go through "
             "gRPC",
             bytes, address_, link.arena.allocated_bytes(), link.arena.capacity(),
             link.arena.quarantined_bytes());
  }

  std::shared_ptr<SharedLink> link() const {
    absl::MutexLock lock(&slot_->mu);
    return slot_->link;
  }

  // Creates a region and offers it; from the server's yes on, values go
  // through it. Any failure leaves the channel on gRPC alone.
  void OfferRegion(const ShardChannelOptions& options) {
    absl::StatusOr<std::unique_ptr<SharedRegion>> region =
        SharedRegion::Create(static_cast<size_t>(options.shared_memory_bytes));
    if (!region.ok()) {
      LOG_INFO("values to server {} go through gRPC: {}", address_, region.status().message());
      return;
    }
    auto offer = std::make_shared<v1::OpenRegionRequest>();
    offer->set_worker_id(options.worker_id);
    offer->set_incarnation(options.incarnation);
    offer->set_pid(getpid());
    offer->set_fd((*region)->fd());
    offer->set_bytes((*region)->size());
    offer->set_token((*region)->token());
    auto context = std::make_shared<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto answer = std::make_shared<v1::OpenRegionResponse>();
    std::shared_ptr<SharedRegion> held(std::move(*region));
    // The answer may come after this channel is gone: it writes into the
    // link slot, which it shares, not into the channel.
    Done accepted = [slot = slot_, address = address_, counters = counters_, offer, context,
                     answer, held](grpc::Status status) mutable {
      if (!status.ok()) {
        LOG_INFO("values to server {} go through gRPC: it refused the shared region: {}",
                 address, status.error_message());
        return;
      }
      LOG_INFO("values to server {} go through a {}-byte shared region", address, held->size());
      {
        absl::MutexLock lock(&slot->mu);
        slot->link = std::make_shared<SharedLink>(std::move(held), answer->region());
      }
      if (counters != nullptr) counters->regions.fetch_add(1, std::memory_order_relaxed);
    };
    (new QueuedCall(std::move(accepted)))
        ->Start(stub_->PrepareAsyncOpenRegion(context.get(), *offer, calls_->Begin()),
                answer.get());
  }

  const std::string address_;
  const std::shared_ptr<SharedMemoryCounters> counters_;
  const std::shared_ptr<CallQueue> calls_;  // where calls no caller waits on complete
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::ParameterService::Stub> stub_;
  grpc::GenericStub raw_;
  std::atomic<bool> full_noted_{false};
  const std::shared_ptr<ReceivedPulls> received_ = std::make_shared<ReceivedPulls>();

  // The region, once the server accepted it.
  struct LinkSlot {
    absl::Mutex mu;
    std::shared_ptr<SharedLink> link ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<LinkSlot> slot_ = std::make_shared<LinkSlot>();
};

}  // namespace

ShardConnector GrpcShardConnector(ShardChannelOptions options) {
  // One queue for every channel of the connector (of one client).
  auto calls = std::make_shared<CallQueue>();
  return [options, calls](const std::string& address) {
    return std::make_shared<GrpcShardChannel>(address, options, calls);
  };
}

bool RetriableShardStatus(const grpc::Status& status) {
  return StaleMapVersion(status).has_value() ||
         status.error_code() == grpc::StatusCode::UNAVAILABLE;
}

grpc::Status ClockAndWait(ShardChannel& channel, grpc::ClientContext* context,
                          const v1::ClockRequest& request, v1::ClockResponse* response) {
  std::promise<grpc::Status> done;
  std::future<grpc::Status> status = done.get_future();
  channel.Clock(context, &request, response,
                [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return status.get();
}

}  // namespace cairn
