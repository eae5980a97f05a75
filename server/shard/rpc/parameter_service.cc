#include "server/shard/rpc/parameter_service.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/killpoint.h"
#include "common/log.h"
#include "common/received_tables.h"
#include "common/security/access_policy.h"
#include "common/security/transport_security.h"
#include "common/status_conversion.h"
#include "common/time_source.h"
#include "server/shard/push_stream.h"
#include "server/shard/rpc/pull_reply.h"
#include "server/shard/rpc/replica_forwarder.h"
#include "server/shard/shard.h"
#include "server/shard/shard_metrics.h"

namespace cairn {
namespace {

uint64_t KeyBytes(const v1::PullRequest& r) {
  uint64_t n = 0;
  for (const auto& t : r.tables()) n += t.keys().size();
  return n;
}
// Value bytes, inline or in a shared region.
uint64_t ValueBytes(const v1::PullResponse& r) {
  uint64_t n = 0;
  for (const auto& t : r.tables()) n += t.values().size() + t.shared().length();
  return n;
}
// Keys and values, inline (in the message, or as `received`) or in a
// shared region.
uint64_t PushBytes(const v1::PushRequest& r, absl::Span<const ValuePieces> received) {
  uint64_t n = 0;
  for (const auto& t : r.tables()) n += t.keys().size() + t.values().size() + t.shared().length();
  for (const ValuePieces& pieces : received) n += PiecesBytes(pieces);
  return n;
}

// A served pull in `metrics` (may be null): its wait when it succeeded, and
// the request with its bytes and seconds since `start`.
void RecordPull(ShardMetrics* metrics, const v1::PullRequest& request,
                const v1::PullResponse& response, const absl::Status& status, absl::Time start) {
  if (metrics == nullptr) return;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (status.ok()) metrics->PullWait(seconds);
  metrics->Request(ShardMetrics::kPull, absl::StatusCodeToString(status.code()),
                   KeyBytes(request), status.ok() ? ValueBytes(response) : 0, seconds);
}

// Records a push's end_clock as the worker's clock (PushRequest.end_clock);
// sets response->ticked when it was. A failure is logged at debug level
// only: the worker sends the tick again as a ClockRequest, which reports it.
void RecordTick(Shard* shard, const v1::PushRequest& push, v1::PushResponse* response) {
  v1::ClockRequest clock;
  clock.set_map_version(push.map_version());
  clock.set_worker_id(push.worker_id());
  clock.set_incarnation(push.incarnation());
  clock.set_clock(push.end_clock());
  absl::StatusOr<int64_t> min_clock = shard->Clock(clock);
  if (!min_clock.ok()) {
    LOG_DEBUG("tick {} carried by a push of worker {} not recorded: {}", push.end_clock(),
              push.worker_id(), min_clock.status().message());
  }
  response->set_ticked(min_clock.ok());
}

// A call from a worker's call slot (call_slots.h) with its parsed request
// and the response the shard fills until it is answered.
template <typename Request, typename Response>
struct SlotHeld {
  std::unique_ptr<SlotCall> slot;
  Request request;
  Response response;
};

// Answers `call` with `status` (its binary details too: a stale map's), and
// with `response` when it is OK; INTERNAL naming the sizes when the
// response does not fit in the slot.
void AnswerSlot(SlotCall& call, const grpc::Status& status,
                const google::protobuf::MessageLite* response = nullptr) {
  std::string bytes;
  if (status.ok() && response != nullptr) response->SerializeToString(&bytes);
  absl::Status answered = call.Answer(static_cast<int>(status.error_code()),
                                      status.error_message(), bytes, status.error_details());
  if (!answered.ok()) {
    call.Answer(static_cast<int>(absl::StatusCode::kInternal), answered.message(), "")
        .IgnoreError();
  }
}

// Parses `call`'s request (a `what`) into `request`: false, the call
// answered INVALID_ARGUMENT naming what is wrong, when the bytes are not
// one or the request is not the slot's worker's own.
template <typename Request>
bool ParseSlotRequest(SlotCall& call, const char* what, Request* request) {
  const absl::string_view bytes = call.request();
  if (!request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    AnswerSlot(call, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  absl::StrCat("a ", what, " of ", bytes.size(),
                                               " bytes through a call slot is not a ",
                                               request->GetTypeName())));
    return false;
  }
  if (request->worker_id() != call.worker_id()) {
    AnswerSlot(call, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  absl::StrCat("a ", what, " of worker ", request->worker_id(),
                                               " came through the call slot of worker ",
                                               call.worker_id(), "'s region")));
    return false;
  }
  return true;
}

}  // namespace

ParameterService::ParameterService(ShardMetrics* metrics, absl::Duration max_wait)
    : metrics_(metrics),
      max_wait_(max_wait),
      pull_handler_([this](PullCall* call) { ServePull(call); }),
      push_handler_([this](PushCall* call) { ServePush(call); }),
      clock_handler_([this](ClockCall* call) { ServeClock(call); }),
      stats_handler_([this](StatsCall* call) { ServeStats(call); }),
      checkpoint_handler_([this](CheckpointCall* call) { ServeCheckpoint(call); }),
      open_region_handler_([this](OpenRegionCall* call) { ServeOpenRegion(call); }),
      replicate_handler_([this](ReplicateCall* call) { ServeReplicate(call); }) {}

void ParameterService::Serve(CompletionLoop* loop) {
  grpc::ServerCompletionQueue* cq = loop->server_cq();
  PullCall::Listen(this, &ParameterService::RequestPull, cq, &pull_handler_);
  PushCall::Listen(this, &ParameterService::RequestPush, cq, &push_handler_);
  ClockCall::Listen(this, &ParameterService::RequestClock, cq, &clock_handler_);
  StatsCall::Listen(this, &ParameterService::RequestStats, cq, &stats_handler_);
  CheckpointCall::Listen(this, &ParameterService::RequestCheckpoint, cq, &checkpoint_handler_);
  OpenRegionCall::Listen(this, &ParameterService::RequestOpenRegion, cq, &open_region_handler_);
  ReplicateCall::Listen(this, &ParameterService::RequestReplicate, cq, &replicate_handler_);
}

void ParameterService::Attach(std::shared_ptr<const Attached> attached) {
  absl::MutexLock lock(&mu_);
  attached_ = std::move(attached);
}

std::shared_ptr<const ParameterService::Attached> ParameterService::Current() const {
  absl::ReaderMutexLock lock(&mu_);
  return attached_;
}

grpc::Status ParameterService::NotAttached() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "server is not registered with the coordinator (not yet, or it is "
                      "registering again after being declared dead)");
}

void ParameterService::ServePull(PullCall* pull) {
  // What the shard reads and fills until the pull is answered (maybe later,
  // on the thread that releases a waiting pull).
  struct Call {
    v1::PullRequest request;
    v1::PullResponse response;
    PullReplyBuffer values;
  };
  auto call = std::make_shared<Call>();
  // Deserialize takes the buffer's slices.
  if (!grpc::SerializationTraits<v1::PullRequest>::Deserialize(pull->mutable_request(),
                                                               &call->request)
           .ok()) {
    pull->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "pull: the request is not a cairn.v1.PullRequest"));
    return;
  }
  const v1::PullRequest* request = &call->request;
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    pull->Finish(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  const absl::Time start = absl::Now();
  const absl::Time deadline = PullDeadline(absl::FromChrono(pull->context().deadline()));
  ShardMetrics* metrics = metrics_;
  // The answer's values go straight into the worker's shared region when
  // its request reserved room there, else into the reply's own slice.
  std::optional<SharedRegions::Reply> reply = regions_.ResolveReply(*request);
  PullReplyArea area;
  std::shared_ptr<SharedRegion> held;
  if (reply.has_value()) {
    area = PullReplyArea{reply->bytes, request->reply_to().region(),
                         request->reply_to().offset()};
    held = std::move(reply->region);
  } else {
    area.allocate = [values = &call->values](uint64_t bytes) { return values->Allocate(bytes); };
  }
  shard->Pull(request, &call->response, deadline,
              [pull, call, start, metrics, attached, held](absl::Status status) {
                if (status.ok()) {
                  if (call->values.allocated()) {
                    *pull->response() = call->values.Serialize(call->response);
                  } else {
                    bool own = false;
                    status = FromGrpcStatus(grpc::SerializationTraits<v1::PullResponse>::Serialize(
                        call->response, pull->response(), &own));
                  }
                }
                RecordPull(metrics, call->request, call->response, status, start);
                pull->Finish(ToGrpcStatus(status));
              },
              area);
}

absl::Time ParameterService::PullDeadline(absl::Time call_deadline) const {
  absl::Duration wait = max_wait_;
  const absl::Duration left = call_deadline - absl::Now();
  if (left < wait) wait = left;
  return MonotonicNow() + wait;
}

void ParameterService::PullAfterPush(absl::Time push_deadline,
                                     std::shared_ptr<const Attached> attached,
                                     const v1::PullRequest* pull, v1::PullResponse* response,
                                     std::shared_ptr<const PullReadBack> read_back,
                                     std::function<void(absl::Status)> done) {
  const absl::Time start = absl::Now();
  PullReplyArea area;
  std::shared_ptr<SharedRegion> held;
  if (std::optional<SharedRegions::Reply> reply = regions_.ResolveReply(*pull)) {
    area = PullReplyArea{reply->bytes, pull->reply_to().region(), pull->reply_to().offset()};
    area.read_back = read_back.get();
    held = std::move(reply->region);
  }
  Shard* shard = attached->shard.get();
  ShardMetrics* metrics = metrics_;
  // Its wait ends by half of what is left of the push's deadline, so that
  // a long wait for other workers' ticks (a straggler under BSP) answers
  // the push in time, without the pull, and does not make the worker send
  // the push again as one that timed out; the worker then pulls on its own.
  const absl::Duration left = push_deadline - absl::Now();
  const absl::Time deadline = std::min(PullDeadline(push_deadline), MonotonicNow() + left / 2);
  shard->Pull(pull, response, deadline,
              [pull, response, start, metrics, attached, held, read_back,
               done = std::move(done)](absl::Status status) {
                RecordPull(metrics, *pull, *response, status, start);
                done(std::move(status));
              },
              area);
}

void ParameterService::ServePush(PushCall* call) {
  // What the shard reads until the push is answered (maybe later, on
  // another thread): the request as received, its values left in gRPC's
  // slices, and the response.
  struct Held {
    ReceivedTables received;
    v1::PushRequest request;
    v1::PushResponse response;
  };
  auto held = std::make_shared<Held>();
  held->received.bytes()->Swap(call->mutable_request());
  if (absl::Status read = held->received.Read(
          &held->request, v1::PushRequest::kTablesFieldNumber,
          [r = &held->request] { return r->add_tables(); },
          {"push: the request (a cairn.v1.PushRequest)", absl::StatusCode::kInvalidArgument});
      !read.ok()) {
    call->Finish(ToGrpcStatus(read));
    return;
  }
  std::optional<Role> role = CallerRole(call->context());
  HandlePush(&held->request, &held->response,
             PushFrom{role, absl::FromChrono(call->context().deadline())},
             held->received.all_values(), [call, held](const grpc::Status& status) {
               if (!status.ok()) {
                 call->Finish(status);
                 return;
               }
               bool own_buffer;
               const grpc::Status serialized =
                   grpc::SerializationTraits<v1::PushResponse>::Serialize(
                       held->response, call->response(), &own_buffer);
               call->Finish(serialized);
             },
             /*may_answer_accepted=*/true);  // `held` lives until HandlePush returns
}

void ParameterService::ServeSlotCall(std::unique_ptr<SlotCall> slot) {
  if (slot->method() == call_slot::kPull) {
    ServeSlotPull(std::move(slot));
    return;
  }
  // What the shard reads and fills until the push is answered (maybe
  // later, on another thread: a riding pull that waits).
  auto held = std::make_shared<SlotHeld<v1::PushRequest, v1::PushResponse>>();
  held->slot = std::move(slot);
  if (!ParseSlotRequest(*held->slot, "push", &held->request)) return;
  // A slot carries its worker's own pushes, never a forwarded copy.
  if (held->request.forwarded()) {
    AnswerSlot(*held->slot, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                         "a forwarded push came through a worker's call slot"));
    return;
  }
  HandlePush(&held->request, &held->response, PushFrom{Role::kWorker, held->slot->deadline()},
             {}, [held](const grpc::Status& status) {
               v1::PushResponse* response = &held->response;
               if (status.ok() && response->ByteSizeLong() > call_slot::kAnswerCapacity &&
                   response->has_pull()) {
                 // The riding pull's answer went inline and is too large
                 // for the slot: the worker pulls on its own.
                 response->clear_pull();
               }
               AnswerSlot(*held->slot, status, response);
             });
}

void ParameterService::ServeSlotPull(std::unique_ptr<SlotCall> slot) {
  auto held = std::make_shared<SlotHeld<v1::PullRequest, v1::PullResponse>>();
  held->slot = std::move(slot);
  if (!ParseSlotRequest(*held->slot, "pull", &held->request)) return;
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    AnswerSlot(*held->slot, NotAttached());
    return;
  }
  // Only an answer whose values go into the worker's region is small
  // enough for the slot: any other goes through gRPC.
  std::optional<SharedRegions::Reply> reply = regions_.ResolveReply(held->request);
  if (!reply.has_value()) {
    held->slot->Decline();
    return;
  }
  const PullReplyArea area{reply->bytes, held->request.reply_to().region(),
                           held->request.reply_to().offset()};
  const absl::Time start = absl::Now();
  ShardMetrics* metrics = metrics_;
  attached->shard->Pull(
      &held->request, &held->response, PullDeadline(held->slot->deadline()),
      [held, start, metrics, attached, region = std::move(reply->region)](absl::Status status) {
        RecordPull(metrics, held->request, held->response, status, start);
        AnswerSlot(*held->slot, ToGrpcStatus(status), &held->response);
      },
      area);
}

void ParameterService::HandlePush(const v1::PushRequest* request, v1::PushResponse* response,
                                  PushFrom from, absl::Span<const ValuePieces> received,
                                  std::function<void(const grpc::Status&)> done,
                                  bool may_answer_accepted) {
  // Under TLS a forwarded copy must come from a server, a push from a worker.
  if (from.role.has_value()) {
    if (absl::Status s = AuthorizePush(request->forwarded(), *from.role); !s.ok()) {
      done(ToGrpcStatus(s));
      return;
    }
  }
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    done(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  const absl::Time start = absl::Now();
  // Values in the worker's shared region are applied from there.
  std::optional<SharedRegions::PushValues> shared;
  if (SharedRegions::UsesRegion(*request)) {
    absl::StatusOr<SharedRegions::PushValues> values = regions_.ResolvePush(*request, received);
    if (!values.ok()) {
      done(ToGrpcStatus(values.status()));
      return;
    }
    shared = *std::move(values);
  }
  // The riding pull's room in the worker's region, for the shard to write
  // its values into as the push's update goes (Shard::PullReadBack).
  std::shared_ptr<PullReadBack> read_back;
  std::shared_ptr<SharedRegion> read_back_region;
  if (request->has_pull() && request->end_clock() > 0 && !request->forwarded() &&
      request->pull().worker_id() == request->worker_id()) {
    if (std::optional<SharedRegions::Reply> reply = regions_.ResolveReply(request->pull())) {
      read_back = std::make_shared<PullReadBack>();
      read_back->pull = &request->pull();
      read_back->room = reply->bytes;
      read_back_region = std::move(reply->region);
    }
  }
  bool ticked_with_push = false;  // recorded by Shard::Push itself
  // A push sent while its values are written (PushRequest.written).
  std::optional<PushStream> stream;
  if (shared.has_value() && shared->written != nullptr) {
    stream.emplace(shared->written, shared->begin, shared->end, from.deadline);
  }
  // Answered before its update when the shard may (Shard::Push's
  // `accepted`): never for values in the worker's region, which the worker
  // reuses once answered.
  bool answered = false;
  std::function<void()> accepted;
  if (may_answer_accepted && answer_accepted_ && !shared.has_value()) {
    accepted = [&] {
      answered = true;
      if (metrics_ != nullptr) {
        metrics_->Request(ShardMetrics::kPush, absl::StatusCodeToString(absl::StatusCode::kOk),
                          PushBytes(*request, received), 0,
                          absl::ToDoubleSeconds(absl::Now() - start));
      }
      done(grpc::Status::OK);
      CAIRN_KILLPOINT("push.after_answer");  // answered, not yet applied
    };
  }
  absl::StatusOr<bool> duplicate =
      shard->Push(*request, shared.has_value() ? absl::MakeConstSpan(shared->values) : received,
                  &ticked_with_push, read_back.get(), stream.has_value() ? &*stream : nullptr,
                  accepted);
  if (answered) return;  // and applied since
  read_back_region.reset();  // PullAfterPush holds the region while it writes
  if (duplicate.ok()) response->set_duplicate(*duplicate);
  if (duplicate.ok() && *duplicate && metrics_ != nullptr) metrics_->DuplicatePush();
  CAIRN_KILLPOINT("push.after_apply");  // applied, not yet acknowledged
  uint64_t version = 0;
  std::vector<Shard::Replica> backups;
  if (duplicate.ok()) backups = shard->ForwardTargets(*request, &version);
  ShardMetrics* metrics = metrics_;
  // A tick carried by the push is recorded once the push is applied here
  // and on every backup, as a ClockRequest after the acknowledgement would.
  const bool tick = request->end_clock() > 0 && !request->forwarded();
  auto finish = [this, done = std::move(done), deadline = from.deadline, request, response,
                 start, metrics, tick, ticked_with_push, attached,
                 push_bytes = PushBytes(*request, received),
                 read_back](absl::Status status) mutable {
    if (status.ok() && tick) {
      if (ticked_with_push) {
        response->set_ticked(true);
      } else {
        RecordTick(attached->shard.get(), *request, response);
      }
    }
    if (metrics != nullptr) {
      metrics->Request(ShardMetrics::kPush, absl::StatusCodeToString(status.code()),
                       push_bytes, 0, absl::ToDoubleSeconds(absl::Now() - start));
    }
    // The next iteration's pull riding on the push is served once the tick
    // is recorded; if it was not (or the push failed), the worker pulls on
    // its own, and that pull reports any error.
    if (status.ok() && request->has_pull() && response->ticked() && !request->forwarded()) {
      PullAfterPush(deadline, attached, &request->pull(), response->mutable_pull(),
                    ticked_with_push ? read_back : nullptr,
                    [done = std::move(done), request, response](absl::Status pulled) {
                      if (!pulled.ok()) {
                        LOG_DEBUG("pull riding on a push of worker {} not served: {}",
                                  request->worker_id(), pulled.message());
                        response->clear_pull();
                      }
                      done(grpc::Status::OK);
                    });
      return;
    }
    done(ToGrpcStatus(status));
  };
  if (!duplicate.ok() || backups.empty() || forwarder_ == nullptr) {
    finish(duplicate.status());
    return;
  }
  // Also a duplicate goes to the backups: the first try may have reached the
  // primary but not them. Replicas apply it once. They get the values inline
  // (they may be on other hosts), sent from where they were applied here;
  // the request stays valid until `finish` runs, the region is held.
  std::shared_ptr<const void> region;
  if (shared.has_value()) region = shared->region;
  forwarder_->Forward(
      ReplicaForwarder::Copy(
          *request, shared.has_value() ? absl::MakeConstSpan(shared->values) : received, version),
      std::move(region), backups, std::move(finish));
}

void ParameterService::ServeClock(ClockCall* call) {
  const v1::ClockRequest* request = &call->request();
  v1::ClockResponse* response = call->response();
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    call->Finish(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> min_clock = shard->Clock(*request);
  if (min_clock.ok()) response->set_min_clock(*min_clock);
  if (metrics_ != nullptr) {
    metrics_->Request(ShardMetrics::kClock, absl::StatusCodeToString(min_clock.status().code()),
                      0, 0, absl::ToDoubleSeconds(absl::Now() - start));
  }
  call->Finish(ToGrpcStatus(min_clock.status()));
}

void ParameterService::ServeStats(StatsCall* call) {
  v1::StatsResponse* response = call->response();
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    call->Finish(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  shard->Stats(response);
  if (metrics_ != nullptr) {
    metrics_->Tables(*response);
    metrics_->Request(ShardMetrics::kStats, "OK", 0, 0, 0);
  }
  call->Finish(grpc::Status::OK);
}

void ParameterService::ServeCheckpoint(CheckpointCall* call) {
  const v1::ShardCheckpointRequest* request = &call->request();
  v1::ShardCheckpointResponse* response = call->response();
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    call->Finish(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  absl::Status status;
  switch (request->phase()) {
    case v1::CHECKPOINT_PHASE_PREPARE: {
      const absl::Duration hold = absl::Milliseconds(std::max<int64_t>(request->hold_ms(), 1));
      absl::StatusOr<int64_t> clock =
          shard->PrepareCheckpoint(request->request_id(), MonotonicNow() + hold);
      if (clock.ok()) response->set_clock(*clock);
      status = clock.status();
      break;
    }
    case v1::CHECKPOINT_PHASE_COMMIT:
      status = shard->CommitCheckpoint(request->request_id(), request->clock());
      break;
    case v1::CHECKPOINT_PHASE_ABORT:
      shard->AbortCheckpoint(request->request_id());
      break;
    default:
      status = absl::InvalidArgumentError(
          absl::StrCat("checkpoint: unknown phase ", static_cast<int>(request->phase())));
  }
  call->Finish(ToGrpcStatus(status));
}

void ParameterService::ServeOpenRegion(OpenRegionCall* call) {
  const v1::OpenRegionRequest* request = &call->request();
  v1::OpenRegionResponse* response = call->response();
  absl::StatusOr<uint64_t> id = regions_.Open(*request);
  if (id.ok()) {
    response->set_region(*id);
    bool slot = false;
    if (call_slots_enabled_ && request->call_slot_bytes() > 0) {
      absl::StatusOr<std::shared_ptr<SharedRegion>> region =
          regions_.Find(*id, request->worker_id());
      absl::Status added = region.status();
      if (added.ok()) {
        added = call_slots_.Add(*region, request->call_slot_offset(),
                                request->call_slot_bytes(), request->worker_id());
      }
      if (added.ok()) {
        slot = true;
      } else {
        LOG_INFO("worker {}'s call slot refused, its pushes come through gRPC: {}",
                 request->worker_id(), added.message());
      }
    }
    response->set_call_slot(slot);
    LOG_INFO("worker {} sends values through a {}-byte shared region ({} open){}",
             request->worker_id(), request->bytes(), regions_.size(),
             slot ? ", pushes through its call slot while this server polls" : "");
  } else {
    LOG_INFO("worker {}'s shared region refused, its values come through gRPC: {}",
             request->worker_id(), id.status().message());
  }
  call->Finish(ToGrpcStatus(id.status()));
}

void ParameterService::ServeReplicate(ReplicateCall* call) {
  const v1::ReplicaChunk* request = &call->request();
  std::shared_ptr<const Attached> attached = Current();
  if (attached == nullptr) {
    call->Finish(NotAttached());
    return;
  }
  Shard* shard = attached->shard.get();
  absl::StatusOr<bool> done = shard->ReceiveReplica(*request);
  if (done.ok() && *done && attached->on_replica_installed) {
    attached->on_replica_installed(request->group());
  }
  call->Finish(ToGrpcStatus(done.status()));
}

}  // namespace cairn
