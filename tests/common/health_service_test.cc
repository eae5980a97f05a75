// HealthService (common/health_service.h) on a real in-process gRPC server
// driven by a CompletionLoop: Check and Watch as a kubelet's probe and
// gRPC's client-side health checking send them.
#include "common/health_service.h"

#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "common/completion_loop.h"
#include "common/grpc_util.h"

namespace cairn {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

struct Served {
  HealthService health{{"cairn.v1.ParameterService"}};
  std::unique_ptr<CompletionLoop> loop;
  StartedServer server;
  std::unique_ptr<Health::Stub> stub;

  Served() {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    GrpcServerOptions options;
    options.address = "127.0.0.1:0";
    options.services = {&health};
    options.completion_queue = &cq;
    options.default_health_service = false;
    absl::StatusOr<StartedServer> started = StartGrpcServer(options);
    REQUIRE(started.ok());
    server = *std::move(started);
    loop = std::make_unique<CompletionLoop>(std::move(cq));
    health.Serve(loop.get());
    loop->Start();
    stub = Health::NewStub(MakeChannel("127.0.0.1:" + std::to_string(server.port), 1 << 20));
  }
  ~Served() {
    server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    loop->Shutdown();
  }

  grpc::Status Check(const std::string& service, HealthCheckResponse* answer) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    HealthCheckRequest request;
    request.set_service(service);
    return stub->Check(&context, request, answer);
  }
};

}  // namespace

TEST_CASE("Check answers the server's status for the whole server and each service it serves, "
          "and NOT_FOUND naming any other",
          "[health]") {
  Served s;
  HealthCheckResponse answer;
  REQUIRE(s.Check("", &answer).ok());
  CHECK(answer.status() == HealthCheckResponse::NOT_SERVING);  // until told otherwise
  s.health.SetServing(true);
  REQUIRE(s.Check("", &answer).ok());
  CHECK(answer.status() == HealthCheckResponse::SERVING);
  REQUIRE(s.Check("cairn.v1.ParameterService", &answer).ok());
  CHECK(answer.status() == HealthCheckResponse::SERVING);
  const grpc::Status unknown = s.Check("cairn.v1.Nothing", &answer);
  CHECK(unknown.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(unknown.error_message().find("cairn.v1.Nothing") != std::string::npos);
  s.health.SetServing(false);
  REQUIRE(s.Check("", &answer).ok());
  CHECK(answer.status() == HealthCheckResponse::NOT_SERVING);
}

TEST_CASE("Watch sends the status, then each change and nothing else, until the caller ends it",
          "[health]") {
  Served s;
  s.health.SetServing(true);
  grpc::ClientContext context;
  HealthCheckRequest request;
  auto reader = s.stub->Watch(&context, request);
  HealthCheckResponse answer;
  REQUIRE(reader->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::SERVING);
  s.health.SetServing(true);  // no change: nothing sent
  s.health.SetServing(false);
  REQUIRE(reader->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::NOT_SERVING);
  s.health.SetServing(true);
  REQUIRE(reader->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::SERVING);

  // Another service's watch: SERVICE_UNKNOWN, and the call stays open.
  grpc::ClientContext other_context;
  request.set_service("cairn.v1.Nothing");
  auto other = s.stub->Watch(&other_context, request);
  REQUIRE(other->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::SERVICE_UNKNOWN);

  context.TryCancel();
  CHECK_FALSE(reader->Read(&answer));
  CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  other_context.TryCancel();
  CHECK_FALSE(other->Read(&answer));
  // A status set after both ended goes nowhere; the server shuts down
  // cleanly with their calls gone (~Served).
  s.health.SetServing(false);
}

TEST_CASE("CancelWatches ends every Watch in flight as cancelled, and later ones are served",
          "[health]") {
  Served s;
  grpc::ClientContext first_context;
  grpc::ClientContext second_context;
  auto first = s.stub->Watch(&first_context, HealthCheckRequest());
  auto second = s.stub->Watch(&second_context, HealthCheckRequest());
  HealthCheckResponse answer;
  REQUIRE(first->Read(&answer));
  REQUIRE(second->Read(&answer));
  s.health.CancelWatches();
  CHECK_FALSE(first->Read(&answer));
  CHECK(first->Finish().error_code() == grpc::StatusCode::CANCELLED);
  CHECK_FALSE(second->Read(&answer));
  CHECK(second->Finish().error_code() == grpc::StatusCode::CANCELLED);

  grpc::ClientContext later_context;
  auto later = s.stub->Watch(&later_context, HealthCheckRequest());
  REQUIRE(later->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::NOT_SERVING);
  s.health.SetServing(true);
  REQUIRE(later->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::SERVING);
  later_context.TryCancel();
  CHECK_FALSE(later->Read(&answer));
}

TEST_CASE("a server shut down with a Watch in flight ends it", "[health]") {
  auto s = std::make_unique<Served>();
  grpc::ClientContext context;
  auto reader = s->stub->Watch(&context, HealthCheckRequest());
  HealthCheckResponse answer;
  REQUIRE(reader->Read(&answer));
  CHECK(answer.status() == HealthCheckResponse::NOT_SERVING);
  s.reset();
  CHECK_FALSE(reader->Read(&answer));
  CHECK_FALSE(reader->Finish().ok());
}

}  // namespace cairn
