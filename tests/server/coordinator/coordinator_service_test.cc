// The Coordinator gRPC service in-process, over a real loopback channel.
#include "server/coordinator/coordinator_service.h"

#include <grpcpp/grpcpp.h>

#include <thread>

#include <catch2/catch.hpp>

#include "absl/synchronization/notification.h"
#include "common/grpc_util.h"
#include "common/time_source.h"

namespace cairn {
namespace {

v1::JobSpec Job() {
  v1::JobSpec job;
  job.set_num_servers(1);
  job.set_num_workers(2);
  job.set_num_partitions(4);
  job.set_lease_timeout_ms(5000);
  job.set_heartbeat_interval_ms(500);
  job.set_config_hash("abc123");
  return job;
}

// A coordinator on 127.0.0.1:<free port> and a stub dialing it.
class Harness {
 public:
  Harness() : state_(Job(), &time_, nullptr), service_(&state_, nullptr) {
    GrpcServerOptions options;
    options.address = "127.0.0.1:0";
    options.services.push_back(&service_);
    absl::StatusOr<StartedServer> started = StartGrpcServer(options);
    REQUIRE(started.ok());
    server_ = std::move(started->server);
    address_ = "127.0.0.1:" + std::to_string(started->port);
    stub_ = v1::Coordinator::NewStub(MakeChannel(address_, 4 << 20));
  }
  ~Harness() {
    state_.Shutdown();
    server_->Shutdown();
  }

  v1::Coordinator::Stub& stub() { return *stub_; }
  CoordinatorState& state() { return state_; }

 private:
  RealTimeSource time_;
  CoordinatorState state_;
  CoordinatorService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

TEST_CASE("registration answers the id, the job spec and the map", "[coordinator][rpc]") {
  Harness harness;
  v1::RegisterServerRequest server_request;
  server_request.set_address("127.0.0.1:7001");
  server_request.set_metrics_address("127.0.0.1:9001");
  server_request.set_requested_id(-1);
  v1::RegisterServerResponse server_response;
  REQUIRE(harness.stub().RegisterServer(Context().get(), server_request, &server_response).ok());
  CHECK(server_response.server_id() == 0);
  CHECK(server_response.job().config_hash() == "abc123");
  CHECK(server_response.job().num_partitions() == 4);
  CHECK(server_response.map().assignments_size() == 4);
  CHECK(server_response.map().servers(0).metrics_address() == "127.0.0.1:9001");
  CHECK_FALSE(server_response.map().ready());

  v1::RegisterWorkerRequest worker_request;
  worker_request.set_requested_id(1);
  v1::RegisterWorkerResponse worker_response;
  REQUIRE(harness.stub().RegisterWorker(Context().get(), worker_request, &worker_response).ok());
  CHECK(worker_response.worker_id() == 1);
  CHECK(worker_response.job().num_workers() == 2);

  // The same id again while alive.
  grpc::Status twice = harness.stub().RegisterWorker(Context().get(), worker_request,
                                                     &worker_response);
  CHECK(twice.error_code() == grpc::StatusCode::ALREADY_EXISTS);

  v1::ListMembersResponse members;
  REQUIRE(harness.stub().ListMembers(Context().get(), {}, &members).ok());
  REQUIRE(members.members_size() == 2);
  CHECK(members.members(0).role() == v1::MEMBER_ROLE_SERVER);
  CHECK(members.members(1).role() == v1::MEMBER_ROLE_WORKER);
  CHECK(members.members(1).id() == 1);
  CHECK(members.map().version() == harness.state().Map().version());
}

TEST_CASE("heartbeats renew known members and answer NotFound to strangers",
          "[coordinator][rpc]") {
  Harness harness;
  v1::RegisterWorkerRequest worker_request;
  worker_request.set_requested_id(-1);
  v1::RegisterWorkerResponse worker_response;
  REQUIRE(harness.stub().RegisterWorker(Context().get(), worker_request, &worker_response).ok());

  v1::HeartbeatRequest beat;
  beat.set_role(v1::MEMBER_ROLE_WORKER);
  beat.set_id(worker_response.worker_id());
  beat.set_clock(3);
  v1::HeartbeatResponse answer;
  REQUIRE(harness.stub().Heartbeat(Context().get(), beat, &answer).ok());
  CHECK(answer.lease_ms() == 5000);
  CHECK(answer.map_version() == worker_response.map().version());
  CHECK_FALSE(answer.job_done());

  beat.set_role(v1::MEMBER_ROLE_SERVER);
  grpc::Status unknown = harness.stub().Heartbeat(Context().get(), beat, &answer);
  CHECK(unknown.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK_THAT(unknown.error_message(), Catch::Matchers::Contains("server 0"));

  v1::LeaveRequest leave;
  leave.set_role(v1::MEMBER_ROLE_WORKER);
  leave.set_id(worker_response.worker_id());
  leave.set_final_clock(3);
  v1::LeaveResponse left;
  REQUIRE(harness.stub().Leave(Context().get(), leave, &left).ok());
  beat.set_role(v1::MEMBER_ROLE_WORKER);
  CHECK(harness.stub().Heartbeat(Context().get(), beat, &answer).error_code() ==
        grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("WatchPartitionMap returns promptly when the map changes", "[coordinator][rpc][watch]") {
  Harness harness;
  v1::GetPartitionMapResponse current;
  REQUIRE(harness.stub().GetPartitionMap(Context().get(), {}, &current).ok());
  CHECK(current.job().num_servers() == 1);
  const uint64_t known = current.map().version();

  v1::GetPartitionMapResponse watched;
  grpc::Status watch_status;
  absl::Time answered;
  std::thread watcher([&] {
    v1::GetPartitionMapRequest request;
    request.set_known_version(known);
    request.set_wait_ms(10000);
    watch_status = harness.stub().WatchPartitionMap(Context().get(), request, &watched);
    answered = absl::Now();
  });
  // Let the watch reach the server before the change (if it arrives later it
  // sees the new version at once; either way it must answer well before 10 s).
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time changed = absl::Now();
  v1::RegisterServerRequest request;
  request.set_address("127.0.0.1:7001");
  request.set_requested_id(-1);
  v1::RegisterServerResponse response;
  REQUIRE(harness.stub().RegisterServer(Context().get(), request, &response).ok());
  watcher.join();
  REQUIRE(watch_status.ok());
  CHECK(watched.map().version() == known + 1);
  CHECK(watched.map().servers_size() == 1);
  CHECK(answered - changed < absl::Seconds(2));
}

TEST_CASE("WatchPartitionMap without a change answers after wait_ms with the same version",
          "[coordinator][rpc][watch]") {
  Harness harness;
  const uint64_t known = harness.state().Map().version();
  v1::GetPartitionMapRequest request;
  request.set_known_version(known);
  request.set_wait_ms(100);
  v1::GetPartitionMapResponse response;
  const absl::Time start = absl::Now();
  REQUIRE(harness.stub().WatchPartitionMap(Context().get(), request, &response).ok());
  const absl::Duration took = absl::Now() - start;
  CHECK(response.map().version() == known);
  CHECK(took >= absl::Milliseconds(100));
  CHECK(took < absl::Seconds(5));
}

}  // namespace
}  // namespace cairn
