#include "worker/client/shard_channel.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/call_slot.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/push_payload.h"
#include "common/shared_region.h"
#include "common/status_conversion.h"
#include "worker/client/call_queue.h"
#include "worker/client/call_slot_client.h"
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
  // The region's call slot, when the server accepted it (it polls it).
  std::shared_ptr<CallSlotClient> slot;

  // The arena starts at `arena_begin` (past the call slot, when one was
  // offered).
  SharedLink(std::shared_ptr<SharedRegion> r, uint64_t i, uint64_t arena_begin)
      : region(std::move(r)), id(i), arena(arena_begin, region->size()) {}

  // Blocks of the arena lent to the caller (LentBuffer), by offset: their
  // bytes and whether a call that used them in place failed.
  struct Loan {
    uint64_t bytes = 0;
    std::shared_ptr<std::atomic<bool>> spoiled;
  };
  absl::Mutex loans_mu;
  std::map<uint64_t, Loan> loans ABSL_GUARDED_BY(loans_mu);

  // The offset of `bytes` at `p` when they lie within one lent block not
  // spoiled, with that block's flag; nullopt otherwise (not in the region,
  // not lent memory, or a block a failed call may still write late: its
  // requests go through the arena's blocks).
  std::optional<std::pair<uint64_t, std::shared_ptr<std::atomic<bool>>>> LentRange(
      const char* p, uint64_t bytes) ABSL_LOCKS_EXCLUDED(loans_mu) {
    const char* base = region->data();
    if (p < base || p >= base + region->size() || bytes == 0) return std::nullopt;
    const uint64_t offset = static_cast<uint64_t>(p - base);
    absl::MutexLock lock(&loans_mu);
    auto it = loans.upper_bound(offset);
    if (it == loans.begin()) return std::nullopt;
    --it;
    if (offset + bytes > it->first + it->second.bytes || it->second.spoiled->load()) {
      return std::nullopt;
    }
    return std::make_pair(offset, it->second.spoiled);
  }

  // Whether the `bytes` at `p` overlap a lent block that is spoiled.
  bool OverlapsSpoiled(const char* p, uint64_t bytes) ABSL_LOCKS_EXCLUDED(loans_mu) {
    const char* base = region->data();
    if (p == nullptr || bytes == 0 || p >= base + region->size() || p + bytes <= base) {
      return false;
    }
    const uint64_t begin = p < base ? 0 : static_cast<uint64_t>(p - base);
    const uint64_t end = static_cast<uint64_t>(std::min(p + bytes, base + region->size()) - base);
    absl::MutexLock lock(&loans_mu);
    auto it = loans.upper_bound(begin);
    if (it != loans.begin()) --it;
    for (; it != loans.end() && it->first < end; ++it) {
      if (it->first + it->second.bytes > begin && it->second.spoiled->load()) return true;
    }
    return false;
  }
};

// A lent block (ShardChannel::Lend): back to the arena when destroyed, or
// kept from reuse for good once spoiled (a failed call may still write it).
class LentBuffer final : public SharedBuffer {
 public:
  LentBuffer(std::shared_ptr<SharedLink> link, uint64_t offset, uint64_t bytes,
             std::shared_ptr<std::atomic<bool>> spoiled)
      : link_(std::move(link)), offset_(offset), bytes_(bytes), spoiled_(std::move(spoiled)) {}
  ~LentBuffer() override {
    {
      absl::MutexLock lock(&link_->loans_mu);
      link_->loans.erase(offset_);
    }
    if (spoiled_->load()) {
      link_->arena.Quarantine(offset_);
    } else {
      link_->arena.Free(offset_);
    }
  }
  absl::Span<char> bytes() override {
    return absl::Span<char>(link_->region->data() + offset_, bytes_);
  }
  bool spoiled() const override { return spoiled_->load(); }

 private:
  const std::shared_ptr<SharedLink> link_;
  const uint64_t offset_;
  const uint64_t bytes_;
  const std::shared_ptr<std::atomic<bool>> spoiled_;
};

// Where a pull's answer is written in the region: a block of the arena
// (`lent` null), or the caller's lent block (`lent`: its spoiled flag).
struct ReplyRoom {
  uint64_t offset = 0;
  std::shared_ptr<std::atomic<bool>> lent;
};

// A push's values already in the region, in a lent block (one range per
// table, the tables one after the other): where each table's range starts,
// and the block's spoiled flag.
struct InPlacePush {
  std::vector<uint64_t> offsets;
  std::shared_ptr<std::atomic<bool>> spoiled;
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
    if (options.shared_memory_bytes > 0) {
      OfferRegion(options);
    } else {
      LOG_INFO("values to server {} go through gRPC: {}", address_,
               options.shared_memory_off.empty() ? "shared memory is off"
                                                 : options.shared_memory_off);
    }
  }

  void Push(grpc::ClientContext* context, const std::shared_ptr<const PushPayload>& payload,
            std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
            grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    std::optional<InPlacePush> in_place = InPlace(link.get(), *payload);
    const std::optional<uint64_t> at =
        in_place.has_value() ? std::nullopt : ReserveValues(link.get(), *payload);
    StartPush(context, payload, std::move(pin), response, std::move(done), cq, link, at,
              std::move(in_place), /*rider=*/nullptr);
  }

  void PushAndPull(grpc::ClientContext* context,
                   const std::shared_ptr<const PushPayload>& payload, std::shared_ptr<void> pin,
                   v1::PushResponse* response, Done push_done, grpc::ClientContext* pull_context,
                   v1::PullRequest* pull, uint64_t reply_bytes, char* reply_into,
                   v1::PullResponse* pull_response, Done pull_done,
                   grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    std::optional<InPlacePush> in_place = InPlace(link.get(), *payload);
    const std::optional<uint64_t> at =
        in_place.has_value() ? std::nullopt : ReserveValues(link.get(), *payload);
    // The pull rides only where both its answer and the push's values go
    // through the region: inline, the answer would be copied into the
    // PushResponse.
    std::optional<ReplyRoom> room;
    if ((at.has_value() || in_place.has_value()) && reply_bytes >= kMinSharedBytes) {
      room = Room(*link, reply_bytes, reply_into);
    }
    if (!room.has_value()) {
      StartPush(context, payload, std::move(pin), response, std::move(push_done), cq, link, at,
                std::move(in_place), /*rider=*/nullptr);
      Pull(pull_context, pull, reply_bytes, reply_into, pull_response, std::move(pull_done), cq);
      return;
    }
    v1::SharedRange* range = pull->mutable_reply_to();
    range->set_region(link->id);
    range->set_offset(room->offset);
    range->set_length(reply_bytes);
    Done both = [this, link, room = *room, response, pull_context, pull, reply_bytes, reply_into,
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
          if (room.lent != nullptr && bytes > 0) {
            counters_->in_place.fetch_add(1, std::memory_order_relaxed);
          }
        }
        pull_done(grpc::Status::OK);
        Release(*link, room, true);
        return;
      }
      // Not served with the push: the pull goes on its own. A server may
      // still write into the range of a call that failed.
      Release(*link, room, status.ok());
      pull->clear_reply_to();
      Pull(pull_context, pull, reply_bytes, reply_into, pull_response, std::move(pull_done), cq);
    };
    StartPush(context, payload, std::move(pin), response, std::move(both), cq, link, at,
              std::move(in_place), pull);
  }

  std::unique_ptr<SharedBuffer> Lend(uint64_t bytes) override {
    std::shared_ptr<SharedLink> link = this->link();
    if (link == nullptr || bytes == 0 || bytes > link->arena.capacity() / 4) return nullptr;
    std::optional<uint64_t> at = link->arena.Allocate(bytes);
    if (!at.has_value()) return nullptr;
    auto spoiled = std::make_shared<std::atomic<bool>>(false);
    {
      absl::MutexLock lock(&link->loans_mu);
      link->loans[*at] = SharedLink::Loan{bytes, spoiled};
    }
    return std::make_unique<LentBuffer>(link, *at, bytes, std::move(spoiled));
  }

  void Pull(grpc::ClientContext* context, v1::PullRequest* request, uint64_t reply_bytes,
            char* reply_into, v1::PullResponse* response, Done done,
            grpc::CompletionQueue* cq) override {
    std::shared_ptr<SharedLink> link = this->link();
    std::optional<ReplyRoom> at;
    if (link != nullptr && reply_bytes >= kMinSharedBytes) {
      at = Room(*link, reply_bytes, reply_into);
    }
    if (at.has_value()) {
      v1::SharedRange* range = request->mutable_reply_to();
      range->set_region(link->id);
      range->set_offset(at->offset);
      range->set_length(reply_bytes);
    } else {
      request->clear_reply_to();
    }
    // The request through the generic stub, so that the answer's values
    // are read from the slices gRPC received them in (pull_reply_reader.h).
    auto reply = std::make_shared<ReceivedPull>();
    // Ends the call once `response` is filled; `received`: the answer's
    // inline values are in `reply` (through gRPC).
    auto complete = std::make_shared<std::function<void(grpc::Status, bool)>>(
        [counters = counters_, received = received_, response, link, at, reply,
         done = std::move(done)](grpc::Status status, bool from_reply) {
          if (at.has_value() && status.ok()) {
            uint64_t bytes = 0;
            for (const v1::TableValues& t : response->tables()) bytes += t.shared().length();
            if (bytes > 0) Count(counters.get(), bytes);
            if (bytes > 0 && at->lent != nullptr && counters != nullptr) {
              counters->in_place.fetch_add(1, std::memory_order_relaxed);
            }
          }
          // The server may still write into a failed call's range: kept
          // from reuse (a lent block spoiled) before `done` decides on a
          // retry.
          if (at.has_value() && !status.ok()) Release(*link, *at, false);
          const bool add = status.ok() && from_reply;
          if (add) received->Add(response, reply.get());
          done(status);
          if (add) received->Remove(response);
          if (at.has_value() && status.ok()) Release(*link, *at, true);
        });
    Done finish = [response, reply, complete](grpc::Status status) {
      if (status.ok()) {
        if (absl::Status read = reply->Read(response); !read.ok()) status = ToGrpcStatus(read);
      }
      (*complete)(std::move(status), true);
    };
    // Sends the request through gRPC.
    auto send = [this, context, request, reply, finish, cq]() mutable {
      auto request_bytes = std::make_shared<grpc::ByteBuffer>();
      bool own = false;
      grpc::Status serialized = grpc::SerializationTraits<v1::PullRequest>::Serialize(
          *request, request_bytes.get(), &own);
      if (!serialized.ok()) {
        // Only a request past protobuf's 2 GiB limit; the call ends
        // CANCELLED the usual way, on the thread its `done` is promised to.
        LOG_ERROR("a pull to server {} cannot be serialized: {}", address_,
                  serialized.error_message());
        context->TryCancel();
      }
      StartRaw(context, kPullMethod, *request_bytes, reply->bytes(),
               [request_bytes, finish = std::move(finish)](grpc::Status status) {
                 finish(std::move(status));
               },
               cq);
    };
    // An answer into the region goes through the call slot when it can.
    if (at.has_value() && cq != nullptr && link->slot != nullptr) {
      auto slot_finish = [response, complete](const grpc::Status& status,
                                              absl::string_view bytes) {
        (*complete)(ParseAnswer(status, bytes, response), false);
      };
      if (PostToSlot(*link->slot, call_slot::kPull, *request, context, slot_finish, send, cq)) {
        return;
      }
    }
    send();
  }

  void Clock(grpc::ClientContext* context, const v1::ClockRequest* request,
             v1::ClockResponse* response, Done done) override {
    (new QueuedCall(std::move(done)))
        ->Start(stub_->PrepareAsyncClock(context, *request, calls_->Begin()), response);
  }

  bool SharesMemory() const override { return link() != nullptr; }

  bool InLentMemory(const char* p, uint64_t bytes) const override {
    const std::shared_ptr<SharedLink> shared = link();
    return shared != nullptr && shared->LentRange(p, bytes).has_value();
  }

  bool InSpoiledLentMemory(const char* p, uint64_t bytes) const override {
    const std::shared_ptr<SharedLink> shared = link();
    return shared != nullptr && shared->OverlapsSpoiled(p, bytes);
  }

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

  // The push's values where they already are in a lent block of the
  // region (LentBuffer): each table's one range, the tables one after the
  // other. Nullopt otherwise, or below kMinSharedBytes (sent inline).
  static std::optional<InPlacePush> InPlace(SharedLink* link, const PushPayload& payload) {
    if (link == nullptr || payload.tables.empty()) return std::nullopt;
    InPlacePush out;
    const char* next = nullptr;
    const char* first = nullptr;
    for (const PushTablePayload& t : payload.tables) {
      if (t.values.empty()) return std::nullopt;
      for (absl::Span<const char> r : t.values) {
        if (next != nullptr && r.data() != next) return std::nullopt;
        if (first == nullptr) first = r.data();
        next = r.data() + r.size();
      }
      out.offsets.push_back(
          static_cast<uint64_t>(t.values.front().data() - link->region->data()));
    }
    const uint64_t bytes = static_cast<uint64_t>(next - first);
    if (bytes < kMinSharedBytes) return std::nullopt;
    auto lent = link->LentRange(first, bytes);
    if (!lent.has_value()) return std::nullopt;
    out.spoiled = std::move(lent->second);
    return out;
  }

  // Where a pull's answer goes in the region: in place in the caller's lent
  // block at `reply_into` when that is where it lies, else a block of the
  // arena (nullopt when none is free).
  std::optional<ReplyRoom> Room(SharedLink& link, uint64_t reply_bytes, char* reply_into) {
    if (reply_into != nullptr) {
      if (auto lent = link.LentRange(reply_into, reply_bytes); lent.has_value()) {
        return ReplyRoom{lent->first, std::move(lent->second)};
      }
    }
    std::optional<uint64_t> at = link.arena.Allocate(reply_bytes);
    if (!at.has_value()) {
      NoteFull(link, reply_bytes);
      return std::nullopt;
    }
    return ReplyRoom{*at, nullptr};
  }

  // Starts a push, its values at `at` of the region (reserved by
  // ReserveValues), or already in the region (`in_place`), or, without
  // either, as slices of the caller's memory. `rider` (only with `at` or
  // `in_place`): the pull the request carries (PushRequest.pull).
  void StartPush(grpc::ClientContext* context, const std::shared_ptr<const PushPayload>& payload,
                 std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
                 grpc::CompletionQueue* cq, const std::shared_ptr<SharedLink>& link,
                 std::optional<uint64_t> at, std::optional<InPlacePush> in_place,
                 const v1::PullRequest* rider) {
    // A push whose values are still being written goes only in place,
    // with the count the server follows (PushRequest.written): read any
    // other way, it would carry values not written yet.
    std::optional<uint64_t> written_at;
    if (payload->written != nullptr &&
        payload->written->load(std::memory_order_acquire) != kAllValuesWritten) {
      const char* word = reinterpret_cast<const char*>(payload->written);
      if (!in_place.has_value() || !link->LentRange(word, sizeof(uint64_t)).has_value()) {
        if (at.has_value()) Release(*link, *at, true);
        done(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "a push whose values are still being written cannot go in place "
                          "(it goes again once they are)"));
        return;
      }
      written_at = static_cast<uint64_t>(word - link->region->data());
    }
    auto request = std::make_shared<grpc::ByteBuffer>();
    std::shared_ptr<std::atomic<bool>> spoiled;
    // The request without its values, when they lie in the region.
    std::optional<v1::PushRequest> header;
    if (in_place.has_value()) {
      // Values where the caller wrote them in the region: only ranges go.
      header.emplace(payload->header);
      if (rider != nullptr) *header->mutable_pull() = *rider;
      if (written_at.has_value()) {
        v1::SharedRange* written = header->mutable_written();
        written->set_region(link->id);
        written->set_offset(*written_at);
        written->set_length(sizeof(uint64_t));
        if (counters_ != nullptr) {
          counters_->streamed_pushes.fetch_add(1, std::memory_order_relaxed);
        }
      }
      uint64_t value_bytes = 0;
      for (size_t i = 0; i < payload->tables.size(); ++i) {
        const PushTablePayload& t = payload->tables[i];
        v1::TableValues* tv = header->add_tables();
        *tv = t.meta;
        v1::SharedRange* range = tv->mutable_shared();
        range->set_region(link->id);
        range->set_offset(in_place->offsets[i]);
        range->set_length(t.value_bytes());
        value_bytes += t.value_bytes();
      }
      Count(counters_.get(), value_bytes);
      if (counters_ != nullptr) counters_->in_place.fetch_add(1, std::memory_order_relaxed);
      spoiled = std::move(in_place->spoiled);
    } else if (!at.has_value()) {
      // Values as slices of the caller's memory; gRPC releases `pin`.
      *request = SerializePush(*payload, pin);
    } else {
      // Values copied into the region; the caller's memory is free again
      // once this returns.
      header.emplace(payload->header);
      if (rider != nullptr) *header->mutable_pull() = *rider;
      uint64_t value_bytes = 0;
      uint64_t offset = *at;
      for (const PushTablePayload& t : payload->tables) {
        v1::TableValues* tv = header->add_tables();
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
      Count(counters_.get(), value_bytes);
    }
    // Ends the call once `response` is filled (when the status is OK).
    auto answered = std::make_shared<Done>([link, at, spoiled, done = std::move(done)](
                                               grpc::Status status) {
      if (at.has_value()) Release(*link, *at, status.ok());
      // The server may still read a failed call's values late.
      if (spoiled != nullptr && !status.ok()) spoiled->store(true);
      done(std::move(status));
    });
    auto reply = std::make_shared<grpc::ByteBuffer>();
    Done finish = [request, reply, response, answered](grpc::Status status) {
      if (status.ok() &&
          !grpc::SerializationTraits<v1::PushResponse>::Deserialize(reply.get(), response).ok()) {
        status = grpc::Status(grpc::StatusCode::INTERNAL, "cannot parse the server's PushResponse");
      }
      (*answered)(std::move(status));
    };
    if (header.has_value()) {
      // Values in the region: the request may go through the call slot,
      // serialized for gRPC only if it does not.
      if (cq != nullptr && link->slot != nullptr) {
        auto held = std::make_shared<v1::PushRequest>(*std::move(header));
        auto fallback = [this, held, context, request, reply, finish, cq]() mutable {
          bool own = false;
          grpc::SerializationTraits<v1::PushRequest>::Serialize(*held, request.get(), &own);
          StartRaw(context, kPushMethod, *request, reply.get(), std::move(finish), cq);
        };
        auto slot_finish = [response, answered](const grpc::Status& status,
                                                absl::string_view bytes) {
          (*answered)(ParseAnswer(status, bytes, response));
        };
        if (PostToSlot(*link->slot, call_slot::kPush, *held, context, slot_finish, fallback,
                       cq)) {
          return;
        }
        fallback();
        return;
      }
      bool own = false;
      grpc::SerializationTraits<v1::PushRequest>::Serialize(*header, request.get(), &own);
    }
    StartRaw(context, kPushMethod, *request, reply.get(), std::move(finish), cq);
  }

  // Posts `request` for `method` (call_slot::kPush, kPull) through the
  // call slot, when the slot is free, the server polls it and the request
  // fits: `finish` ends the call, or `fallback` sends it through gRPC when
  // the server did not take it or declined it. False when it was not
  // posted (the caller sends it through gRPC).
  bool PostToSlot(CallSlotClient& slot, uint32_t method,
                  const google::protobuf::MessageLite& request, grpc::ClientContext* context,
                  CallSlotClient::Finish finish, std::function<void()> fallback,
                  grpc::CompletionQueue* cq) {
    const size_t bytes = request.ByteSizeLong();
    if (bytes > call_slot::kRequestCapacity || !slot.TryAcquire()) return false;
    request.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(slot.request_area()));
    if (counters_ != nullptr) counters_->slot_calls.fetch_add(1, std::memory_order_relaxed);
    slot.Post(cq, method, static_cast<uint32_t>(bytes), absl::FromChrono(context->deadline()),
              std::move(finish), std::move(fallback));
    return true;
  }

  // What a call through a slot answered into `response`: the status, or
  // INTERNAL when the bytes do not parse as `response`.
  static grpc::Status ParseAnswer(const grpc::Status& status, absl::string_view bytes,
                                  google::protobuf::MessageLite* response) {
    if (status.ok() && !response->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          absl::StrCat("cannot parse the server's ", response->GetTypeName(),
                                       " from the call slot"));
    }
    return status;
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
  // reuse (shared_arena.h). A lent block is the caller's: a failure spoils
  // it (the server may still write it late).
  static void Release(SharedLink& link, const ReplyRoom& room, bool ok) {
    if (room.lent == nullptr) {
      Release(link, room.offset, ok);
    } else if (!ok) {
      room.lent->store(true);
    }
  }
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
    // A call slot right after the header, when the region has room for it
    // and this worker polls as it waits (common/call_slot.h).
    uint64_t arena_begin = SharedRegion::kHeaderBytes;
    if (options.call_slots && (*region)->size() >= 16 * call_slot::kBytes) {
      offer->set_call_slot_offset(SharedRegion::kHeaderBytes);
      offer->set_call_slot_bytes(call_slot::kBytes);
    }    auto context = std::make_shared<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto answer = std::make_shared<v1::OpenRegionResponse>();
    std::shared_ptr<SharedRegion> held(std::move(*region));
    // The answer may come after this channel is gone: it writes into the
    // link slot, which it shares, not into the channel.
    Done accepted = [slot = slot_, address = address_, counters = counters_, offer, context,
                     answer, held, arena_begin](grpc::Status status) mutable {
      if (!status.ok()) {
        LOG_INFO("values to server {} go through gRPC: it refused the shared region: {}",
                 address, status.error_message());
        return;
      }
      // An offered slot stays out of the arena, also when refused.
      const uint64_t begin = offer->call_slot_bytes() > 0
                                 ? offer->call_slot_offset() + offer->call_slot_bytes()
                                 : arena_begin;
      auto link = std::make_shared<SharedLink>(held, answer->region(), begin);
      if (answer->call_slot()) {
        link->slot = std::make_shared<CallSlotClient>(held, offer->call_slot_offset());
      }
      LOG_INFO("values to server {} go through a {}-byte shared region{}", address, held->size(),
               link->slot != nullptr ? ", pushes through its call slot while the server polls"
                                     : "");
      {
        absl::MutexLock lock(&slot->mu);
        slot->link = std::move(link);
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
