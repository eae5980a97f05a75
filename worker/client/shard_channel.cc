#include "worker/client/shard_channel.h"

#include <grpcpp/grpcpp.h>

#include <future>
#include <utility>

#include "cairn/v1/shard.grpc.pb.h"
#include "common/grpc_util.h"

namespace cairn {
namespace {

class GrpcShardChannel final : public ShardChannel {
 public:
  explicit GrpcShardChannel(std::unique_ptr<v1::ParameterService::Stub> stub)
      : stub_(std::move(stub)) {}

  void Push(grpc::ClientContext* context, const v1::PushRequest* request,
            v1::PushResponse* response, Done done) override {
    stub_->async()->Push(context, request, response, std::move(done));
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
  const std::unique_ptr<v1::ParameterService::Stub> stub_;
};

}  // namespace

ShardConnector GrpcShardConnector(int64_t max_message_bytes, absl::Duration dead_after) {
  return [max_message_bytes, dead_after](const std::string& address) {
    return std::make_shared<GrpcShardChannel>(
        v1::ParameterService::NewStub(MakeChannel(address, max_message_bytes, dead_after)));
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
