#include "worker/client/shard_channel.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <future>
#include <utility>

#include "cairn/v1/shard.grpc.pb.h"
#include "common/grpc_util.h"

namespace cairn {
namespace {

class GrpcShardChannel final : public ShardChannel {
 public:
  explicit GrpcShardChannel(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(v1::ParameterService::NewStub(channel)), raw_(channel) {}

  // Sent through the generic stub, so gRPC takes the request's slices as
  // they are instead of serializing a message into a fresh buffer.
  void Push(grpc::ClientContext* context, const grpc::ByteBuffer* request,
            v1::PushResponse* response, Done done) override {
    auto reply = std::make_shared<grpc::ByteBuffer>();
    raw_.UnaryCall(context, kPushMethod, grpc::StubOptions(), request, reply.get(),
                   [reply, response, done = std::move(done)](grpc::Status status) {
                     if (status.ok() &&
                         !grpc::SerializationTraits<v1::PushResponse>::Deserialize(reply.get(),
                                                                                   response)
                              .ok()) {
                       status = grpc::Status(grpc::StatusCode::INTERNAL,
                                             "cannot parse the server's PushResponse");
                     }
                     done(std::move(status));
                   });
  }
  void Pull(grpc::ClientContext* context, const v1::PullRequest* request,
            v1::PullResponse* response, Done done) override {
    stub_->async()->Pull(context, request, response, std::move(done));
  }
  void Clock(grpc::ClientContext* context, const v1::ClockRequest* request,
             v1::ClockResponse* response, Done done) override {
    stub_->async()->Clock(context, request, response, std::move(done));
  }

 private:
  static constexpr const char* kPushMethod = "/cairn.v1.ParameterService/Push";

  const std::unique_ptr<v1::ParameterService::Stub> stub_;
  grpc::GenericStub raw_;
};

}  // namespace

ShardConnector GrpcShardConnector(int64_t max_message_bytes, absl::Duration dead_after) {
  return [max_message_bytes, dead_after](const std::string& address) {
    return std::make_shared<GrpcShardChannel>(MakeChannel(address, max_message_bytes, dead_after));
  };
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
