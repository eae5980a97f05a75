// The client's connection to one server's ParameterService, behind an
// interface: GrpcShardChannel is the real one; unit tests put a fake in its
// place (tests/fakes/fake_shard.h) and drive the client's routing, retries
// and error handling without a process.
#ifndef CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_
#define CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"
#include "common/backoff.h"
#include "worker/client/pull_reply_reader.h"
#include "worker/client/shared_buffer.h"

namespace grpc {
class ByteBuffer;
class ClientContext;
class CompletionQueue;
class Status;
}  // namespace grpc

namespace cairn {

struct PushPayload;

// The tag of an event on a completion queue that a waiting caller drives
// (Client::PullAndWait, PushAndWait): each call a channel starts on such a
// queue has one. Whoever takes the event off the queue
// (grpc::CompletionQueue::Next) calls Complete, once, with Next's `ok`; a
// call's tag runs the call's `done` then deletes itself.
class CqTag {
 public:
  virtual ~CqTag() = default;
  virtual void Complete(bool ok) = 0;
};

// Thread-safe: calls may start from any thread, concurrently.
class ShardChannel {
 public:
  // Runs exactly once per call, on any thread, after the response is filled
  // (when the status is OK).
  using Done = std::function<void(grpc::Status)>;

  virtual ~ShardChannel() = default;

  // Start one call of the RPC of the same name. `context` (its deadline
  // set), `request` and `response` stay valid until `done` has run.
  //
  // `cq`: null, and `done` runs on a thread of the channel's own (the real
  // channel's CallQueue, call_queue.h; Clock's always does); or the queue
  // of a caller that waits for the call, which is started on it, and `done`
  // runs on the thread that takes the call's CqTag off it (so the queue
  // must be driven until then). A channel that answers by other means (a
  // unit test's fake) may ignore `cq` and run `done` on any thread.
  //
  // A push's values stay in the caller's memory (push_payload.h): the
  // channel holds `pin` for as long as it may read them (gRPC's slices
  // point at them, or until they were copied into a shared region), and
  // `payload` and that memory must live as long as `pin` does.
  virtual void Push(grpc::ClientContext* context, const std::shared_ptr<const PushPayload>& payload,
                    std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
                    grpc::CompletionQueue* cq) = 0;
  // `reply_bytes`: the value bytes the answer will hold (the same-host path
  // reserves them in its region); the channel may set `request->reply_to`.
  // `reply_into` (may be null): where the caller's buffers want those bytes
  // when they are one range laid out as the answer's values; memory of a
  // buffer this channel lent (Lend) is then answered into in place.
  virtual void Pull(grpc::ClientContext* context, v1::PullRequest* request, uint64_t reply_bytes,
                    char* reply_into, v1::PullResponse* response, Done done,
                    grpc::CompletionQueue* cq) = 0;
  virtual void Clock(grpc::ClientContext* context, const v1::ClockRequest* request,
                     v1::ClockResponse* response, Done done) = 0;

  // A push (Push's arguments) that ends an iteration, and the pull of the
  // next one (Pull's, from `pull_context` on): in one call, the pull riding
  // on the push (PushRequest.pull), where this channel can: its values and
  // the pull's answer both through its shared region. Otherwise, or when the
  // server did not serve the pull with the push (an older server, or the
  // push's tick not recorded), the pull goes as a call of its own, started
  // with the push or once the push is answered. `push_done` runs once, then
  // `pull_done` once; both on the thread Push's `done` would run on.
  // This default sends the two calls together.
  virtual void PushAndPull(grpc::ClientContext* context,
                           const std::shared_ptr<const PushPayload>& payload,
                           std::shared_ptr<void> pin, v1::PushResponse* response, Done push_done,
                           grpc::ClientContext* pull_context, v1::PullRequest* pull,
                           uint64_t reply_bytes, char* reply_into,
                           v1::PullResponse* pull_response, Done pull_done,
                           grpc::CompletionQueue* cq) {
    Push(context, payload, std::move(pin), response, std::move(push_done), cq);
    Pull(pull_context, pull, reply_bytes, reply_into, pull_response, std::move(pull_done), cq);
  }

  // `bytes` of this channel's shared region lent to the caller
  // (Client::LendSharedBuffer): a push whose values lie in it as one range
  // per request is sent from there, and a pull answered there in place,
  // without the copy through the region. Null without a region, or when it
  // has no free block that large, or `bytes` is above a quarter of it.
  virtual std::unique_ptr<SharedBuffer> Lend(uint64_t bytes) { return nullptr; }

  // Whether values to this server go through a shared region (the server
  // accepted the channel's offer): requests may then be cut larger
  // (JobSpec.shared_memory_split_bytes). A request may still go inline
  // when the region has no room for it.
  virtual bool SharesMemory() const { return false; }

  // Whether the `bytes` at `p` lie within one block this channel lent
  // (Lend) that no failed call spoiled: a push of them is read, and a pull
  // answered, in place, so a request for them carries only their keys.
  virtual bool InLentMemory(const char* /*p*/, uint64_t /*bytes*/) const { return false; }

  // Whether the `bytes` at `p` overlap a block this channel lent that a
  // failed call spoiled: the server may still write a late answer there.
  virtual bool InSpoiledLentMemory(const char* /*p*/, uint64_t /*bytes*/) const {
    return false;
  }

  // The value bytes of table `table` of a pull's answer `response`: its
  // `values`, its range of this channel's shared region, or the pieces of
  // the reply as gRPC received it (pull_reply_reader.h). Valid while the
  // pull's `done` runs, and to be asked for only there. INTERNAL, naming
  // the range, when it is not within the region.
  virtual absl::StatusOr<ValuePieces> PulledValues(const v1::PullResponse& response,
                                                   int table) const {
    const std::string& values = response.tables(table).values();
    return ValuePieces{absl::Span<const char>(values.data(), values.size())};
  }
};

// What the same-host path moved, over every channel of one client.
struct SharedMemoryCounters {
  std::atomic<uint64_t> regions{0};   // regions servers accepted
  std::atomic<uint64_t> requests{0};  // pushes and pulls whose values went through one
  std::atomic<uint64_t> bytes{0};     // value bytes that went through one
  std::atomic<uint64_t> pulls_with_push{0};  // pulls served with a push (PushAndPull)
  // Pushes read and pulls answered in place in a lent buffer (Lend).
  std::atomic<uint64_t> in_place{0};
  // Pushes posted through a region's call slot (common/call_slot.h).
  std::atomic<uint64_t> slot_calls{0};
  // Pushes sent while their values were written (PushRequest.written).
  std::atomic<uint64_t> streamed_pushes{0};
};

// Opens the channel to the server at `address` (host:port from the map).
using ShardConnector = std::function<std::shared_ptr<ShardChannel>(const std::string& address)>;

struct ShardChannelOptions {
  int64_t max_message_bytes = 0;  // gRPC's limit on both directions
  absl::Duration dead_after;      // keepalive
  // The same-host path (docs/shared-memory.md): each channel offers its
  // server a region of this many bytes at once, and sends values through
  // it from the server's yes on; 0: off, for the reason below.
  int64_t shared_memory_bytes = 0;
  std::string shared_memory_off;  // why it is off, as each channel logs it
  // Offer a call slot with the region (common/call_slot.h): for a worker
  // that polls as it waits (ClientOptions::busy_poll above zero).
  bool call_slots = false;
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;
  std::shared_ptr<SharedMemoryCounters> counters;  // may be null
};

// The gRPC connector: one channel per address (common/grpc_util.h's
// MakeChannel), with the same-host path when `options` turn it on.
ShardConnector GrpcShardConnector(ShardChannelOptions options);

// How the client retries a call to a server: it waits 50 ms, doubling per
// attempt up to 1 s.
inline constexpr Backoff kShardRetryBackoff(absl::Milliseconds(50), absl::Seconds(1));

// Whether a server's answer may succeed when sent again after a map refresh:
// UNAVAILABLE (a server down or failing over) or the stale-map answer
// (common/status_conversion.h). Decided on codes and the stale-map detail,
// never on a message's text.
bool RetriableShardStatus(const grpc::Status& status);

// Clock, waiting for the answer.
grpc::Status ClockAndWait(ShardChannel& channel, grpc::ClientContext* context,
                          const v1::ClockRequest& request, v1::ClockResponse* response);

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_
