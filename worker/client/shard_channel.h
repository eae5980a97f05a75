// The client's connection to one server's ParameterService, behind an
// interface: GrpcShardChannel is the real one; unit tests put a fake in its
// place (tests/fakes/fake_shard.h) and drive the client's routing, retries
// and error handling without a process.
#ifndef CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_
#define CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "cairn/v1/shard.pb.h"

namespace grpc {
class ByteBuffer;
class ClientContext;
class Status;
}  // namespace grpc

namespace cairn {

// Thread-safe: calls may start from any thread, concurrently.
class ShardChannel {
 public:
  // Runs exactly once per call, on any thread, after the response is filled
  // (when the status is OK).
  using Done = std::function<void(grpc::Status)>;

  virtual ~ShardChannel() = default;

  // Start one call of the RPC of the same name. `context` (its deadline
  // set), `request` and `response` stay valid until `done` has run. A push
  // request is a PushRequest's wire bytes (worker/client/push_payload.h:
  // values travel from the caller's memory without a copy).
  virtual void Push(grpc::ClientContext* context, const grpc::ByteBuffer* request,
                    v1::PushResponse* response, Done done) = 0;
  virtual void Pull(grpc::ClientContext* context, const v1::PullRequest* request,
                    v1::PullResponse* response, Done done) = 0;
  virtual void Clock(grpc::ClientContext* context, const v1::ClockRequest* request,
                     v1::ClockResponse* response, Done done) = 0;
};

// Opens the channel to the server at `address` (host:port from the map).
using ShardConnector = std::function<std::shared_ptr<ShardChannel>(const std::string& address)>;

// The gRPC connector: one channel per address (common/grpc_util.h's
// MakeChannel) with `max_message_bytes` and keepalive `dead_after`.
ShardConnector GrpcShardConnector(int64_t max_message_bytes, absl::Duration dead_after);

// Clock, waiting for the answer.
grpc::Status ClockAndWait(ShardChannel& channel, grpc::ClientContext* context,
                          const v1::ClockRequest& request, v1::ClockResponse* response);

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_SHARD_CHANNEL_H_
