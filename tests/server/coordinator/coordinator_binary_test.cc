// The cairn-coordinator binary as a child process: flags, port file, exit
// codes, graceful stop, /metrics, and the lease expiry log line.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "cairn/v1/coordinator.grpc.pb.h"
#include "common/grpc_util.h"
#include "tests/testing/http_get.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::ExitStatus;
using testing::Subprocess;

constexpr char kBinary[] = CAIRN_BINARY_DIR "/bin/cairn-coordinator";
constexpr absl::Duration kTimeout = absl::Seconds(30);

struct Job {
  std::string dir;
  std::string config;      // the YAML file
  std::string port_file;
};

Job MakeJob(const std::string& yaml = "cluster:\n  servers: 1\n  workers: 1\n") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("coordinator_binary_test");
  REQUIRE(dir.ok());
  Job job{*dir, *dir + "/job.yaml", *dir + "/ports"};
  REQUIRE(testing::WriteFile(job.config, yaml).ok());
  return job;
}

std::unique_ptr<Subprocess> Start(const Job& job, std::vector<std::string> extra,
                                  const std::string& name = "coordinator") {
  std::vector<std::string> args = {"--config", job.config, "--port-file", job.port_file};
  args.insert(args.end(), extra.begin(), extra.end());
  auto process = Subprocess::Spawn(kBinary, args, job.dir + "/" + name);
  REQUIRE(process.ok());
  return std::move(*process);
}

ExitStatus WaitEnd(Subprocess& process) {
  absl::StatusOr<ExitStatus> ended = process.Wait(kTimeout);
  REQUIRE(ended.ok());
  INFO("stderr: " << process.ReadStderr());
  return *ended;
}

std::map<std::string, int> Ports(const Job& job, Subprocess& process) {
  auto ports = testing::ReadPortFile(job.port_file, kTimeout, &process);
  INFO(ports.status().ToString());
  REQUIRE(ports.ok());
  REQUIRE(ports->count("grpc") == 1);
  REQUIRE(ports->count("metrics") == 1);
  return *ports;
}

std::unique_ptr<v1::Coordinator::Stub> Dial(int port) {
  return v1::Coordinator::NewStub(MakeChannel("127.0.0.1:" + std::to_string(port), 4 << 20));
}

grpc::Status RegisterServer(v1::Coordinator::Stub& stub, v1::RegisterServerResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::RegisterServerRequest request;
  request.set_address("127.0.0.1:7001");
  request.set_requested_id(-1);
  return stub.RegisterServer(&context, request, response);
}

TEST_CASE("--help prints the flags and exits 0", "[coordinator][process]") {
  const Job job = MakeJob();
  auto process = Subprocess::Spawn(kBinary, {"--help"}, job.dir + "/help");
  REQUIRE(process.ok());
  CHECK(WaitEnd(**process).code == 0);
  const std::string out = (*process)->ReadStdout();
  CHECK_THAT(out, Catch::Matchers::Contains("--config") &&
                      Catch::Matchers::Contains("--port-file") &&
                      Catch::Matchers::Contains("Exit codes"));
}

TEST_CASE("the coordinator serves on free ports, exports metrics and stops on SIGTERM with 0",
          "[coordinator][process]") {
  const Job job = MakeJob();
  auto process = Start(job, {"--listen", "127.0.0.1:0", "--metrics-port", "0",
                             "--set", "cluster.workers=3"});
  const std::map<std::string, int> ports = Ports(job, *process);
  CHECK(ports.at("grpc") > 0);
  CHECK(ports.at("metrics") > 0);
  CHECK(testing::ReadFileOrEmpty(job.port_file) ==
        "grpc=" + std::to_string(ports.at("grpc")) + "\nmetrics=" +
            std::to_string(ports.at("metrics")) + "\n");

  auto stub = Dial(ports.at("grpc"));
  v1::RegisterServerResponse response;
  REQUIRE(RegisterServer(*stub, &response).ok());
  CHECK(response.server_id() == 0);
  CHECK(response.job().num_workers() == 3);  // from --set
  CHECK(response.job().num_servers() == 1);

  absl::StatusOr<std::string> metrics = testing::HttpGet("127.0.0.1", ports.at("metrics"),
                                                         "/metrics");
  REQUIRE(metrics.ok());
  CHECK_THAT(*metrics,
             Catch::Matchers::Contains("cairn_coordinator_requests_total{method=\"RegisterServer\"} 1") &&
                 Catch::Matchers::Contains(
                     "cairn_coordinator_members{role=\"server\",state=\"alive\"} 1"));

  // The effective config is logged at start.
  CHECK_THAT(process->ReadStderr(), Catch::Matchers::Contains("cluster.workers: 3"));
  REQUIRE(process->Signal(SIGTERM).ok());
  const ExitStatus ended = WaitEnd(*process);
  CHECK(ended.exited());
  CHECK(ended.code == 0);
  CHECK(::access(job.port_file.c_str(), F_OK) != 0);  // removed at a clean exit
}

TEST_CASE("a second coordinator on a taken port exits 3 naming the address",
          "[coordinator][process]") {
  const Job first_job = MakeJob();
  auto first = Start(first_job, {"--listen", "127.0.0.1:0"});
  const int port = Ports(first_job, *first).at("grpc");

  const Job second_job = MakeJob();
  auto second = Start(second_job, {"--listen", "127.0.0.1:" + std::to_string(port)}, "second");
  const ExitStatus ended = WaitEnd(*second);
  CHECK(ended.code == 3);
  CHECK_THAT(second->ReadStderr(),
             Catch::Matchers::Contains("127.0.0.1:" + std::to_string(port)));
  CHECK(first->Running());
}

TEST_CASE("a bad config exits 2 naming file:line:column", "[coordinator][process]") {
  SECTION("an unknown key") {
    const Job job = MakeJob("cluster:\n  servers: 1\n  servres: 2\n");
    auto process = Start(job, {});
    CHECK(WaitEnd(*process).code == 2);
    CHECK_THAT(process->ReadStderr(), Catch::Matchers::Contains(job.config + ":3:3"));
  }
  SECTION("a bad override") {
    const Job job = MakeJob();
    auto process = Start(job, {"--set", "cluster.servers=0"});
    CHECK(WaitEnd(*process).code == 2);
    CHECK_THAT(process->ReadStderr(), Catch::Matchers::Contains("cluster.servers"));
  }
  SECTION("a missing file") {
    const Job job = MakeJob();
    auto process = Subprocess::Spawn(kBinary, {"--config", job.dir + "/absent.yaml"},
                                     job.dir + "/absent");
    REQUIRE(process.ok());
    CHECK(WaitEnd(**process).code == 2);
    CHECK_THAT((*process)->ReadStderr(), Catch::Matchers::Contains("absent.yaml"));
  }
  SECTION("a bad --listen") {
    const Job job = MakeJob();
    auto process = Start(job, {"--listen", "127.0.0.1:99999"});
    CHECK(WaitEnd(*process).code == 2);
    CHECK_THAT(process->ReadStderr(), Catch::Matchers::Contains("--listen"));
  }
  SECTION("no --config") {
    const Job job = MakeJob();
    auto process = Subprocess::Spawn(kBinary, {}, job.dir + "/noconfig");
    REQUIRE(process.ok());
    CHECK(WaitEnd(**process).code == 2);
    CHECK_THAT((*process)->ReadStderr(), Catch::Matchers::Contains("--config"));
  }
}

TEST_CASE("a server that stops heartbeating is logged dead", "[coordinator][process]") {
  const Job job = MakeJob();
  auto process = Start(job, {"--listen", "127.0.0.1:0", "--set", "cluster.lease_timeout=300ms",
                             "--set", "cluster.heartbeat_interval=100ms"});
  auto stub = Dial(Ports(job, *process).at("grpc"));
  v1::RegisterServerResponse response;
  REQUIRE(RegisterServer(*stub, &response).ok());
  CHECK(process->WaitForStderr("server 0 (127.0.0.1:7001) lease expired: DEAD", kTimeout).ok());
}

TEST_CASE("the job fails with exit 4 when the start-up barrier times out, naming who is missing",
          "[coordinator][process]") {
  const Job job = MakeJob("cluster:\n  servers: 1\n  workers: 2\n  startup_timeout: 1s\n");
  auto process = Start(job, {"--listen", "127.0.0.1:0"});
  auto stub = Dial(Ports(job, *process).at("grpc"));
  v1::RegisterServerResponse response;
  REQUIRE(RegisterServer(*stub, &response).ok());
  CHECK(WaitEnd(*process).code == 4);
  CHECK_THAT(process->ReadStderr(),
             Catch::Matchers::Contains("missing server ids []") &&
                 Catch::Matchers::Contains("missing worker ids [0, 1]"));
}

}  // namespace
}  // namespace cairn
