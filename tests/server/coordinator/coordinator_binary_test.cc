// The cairn-coordinator binary as a child process: flags, port file, exit
// codes, graceful stop, /metrics, and the lease expiry log line.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "cairn/v1/coordinator.grpc.pb.h"
#include "common/grpc_util.h"
#include "server/coordinator/coordinator_store.h"
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

// The "config.hash: <hex>" the coordinator logs at start.
std::string LoggedHash(Subprocess& process) {
  const std::string err = process.ReadStderr();
  const size_t at = err.find("config.hash: ");
  REQUIRE(at != std::string::npos);
  return err.substr(at + 13, 16);
}

grpc::Status Call(v1::Coordinator::Stub& stub, const char* what, int id) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (std::string(what) == "register-worker") {
    v1::RegisterWorkerRequest request;
    request.set_requested_id(id);
    v1::RegisterWorkerResponse response;
    return stub.RegisterWorker(&context, request, &response);
  }
  if (std::string(what) == "heartbeat-worker") {
    v1::HeartbeatRequest request;
    request.set_role(v1::MEMBER_ROLE_WORKER);
    request.set_id(id);
    v1::HeartbeatResponse response;
    return stub.Heartbeat(&context, request, &response);
  }
  v1::LeaveRequest request;
  request.set_role(v1::MEMBER_ROLE_WORKER);
  request.set_id(id);
  v1::LeaveResponse response;
  return stub.Leave(&context, request, &response);
}

bool StateStored(const std::string& dir) {
  auto raw = CoordinatorStore::Peek(dir, kStateKey);
  REQUIRE(raw.ok());
  return raw->has_value();
}

TEST_CASE("B13: a graceful stop keeps the state while workers run, a restart resumes it, a "
          "stop once the job is over removes it",
          "[coordinator][process][restore]") {
  const Job job = MakeJob();
  const std::string state_dir = job.dir + "/state";
  REQUIRE(testing::WriteFile(job.config, "cluster:\n  servers: 1\n  workers: 1\n  state_dir: " +
                                             state_dir + "\n")
              .ok());
  uint64_t version = 0;
  {
    auto first = Start(job, {"--listen", "127.0.0.1:0"}, "first");
    auto stub = Dial(Ports(job, *first).at("grpc"));
    v1::RegisterServerResponse server;
    REQUIRE(RegisterServer(*stub, &server).ok());
    REQUIRE(Call(*stub, "register-worker", 0).ok());
    REQUIRE(first->Signal(SIGTERM).ok());
    CHECK(WaitEnd(*first).code == 0);
    CHECK_THAT(first->ReadStderr(), Catch::Matchers::Contains("coordinator state kept in " +
                                                              state_dir));
    CHECK(StateStored(state_dir));
    version = 3;  // server, worker (ready in the same change)
  }
  auto second = Start(job, {"--listen", "127.0.0.1:0"}, "second");
  auto stub = Dial(Ports(job, *second).at("grpc"));
  CHECK_THAT(second->ReadStderr(),
             Catch::Matchers::Contains(absl::StrCat("map version ", version, " (ready)")));
  // Until a member re-attaches, a registration is asked to retry.
  CHECK(Call(*stub, "register-worker", -1).error_code() == grpc::StatusCode::UNAVAILABLE);
  REQUIRE(Call(*stub, "heartbeat-worker", 0).ok());  // worker 0 re-attaches: no new id
  REQUIRE(Call(*stub, "leave", 0).ok());             // and finishes: the job is over
  REQUIRE(second->Signal(SIGTERM).ok());
  CHECK(WaitEnd(*second).code == 0);
  CHECK_THAT(second->ReadStderr(),
             Catch::Matchers::Contains("the job is over: removed its coordinator state"));
  CHECK_FALSE(StateStored(state_dir));
}

TEST_CASE("B13: another job's state is refused with exit 2 naming both hashes, --discard-state "
          "starts afresh",
          "[coordinator][process][restore]") {
  const Job job = MakeJob();
  const std::string state_dir = job.dir + "/state";
  const std::string yaml = "cluster:\n  servers: 1\n  workers: 2\n  state_dir: " + state_dir + "\n";
  REQUIRE(testing::WriteFile(job.config, yaml).ok());
  auto first = Start(job, {"--listen", "127.0.0.1:0"}, "first");
  auto stub = Dial(Ports(job, *first).at("grpc"));
  v1::RegisterServerResponse server;
  REQUIRE(RegisterServer(*stub, &server).ok());
  const std::string first_hash = LoggedHash(*first);
  CHECK(first->Kill().signal == SIGKILL);  // no goodbye: the state stays

  const std::string other = job.dir + "/other.yaml";
  REQUIRE(testing::WriteFile(other, yaml + "rpc: {deadline: 9s}\n").ok());
  auto refused = Subprocess::Spawn(kBinary, {"--config", other, "--listen", "127.0.0.1:0"},
                                   job.dir + "/refused");
  REQUIRE(refused.ok());
  CHECK(WaitEnd(**refused).code == 2);
  const std::string err = (*refused)->ReadStderr();
  const std::string other_hash = LoggedHash(**refused);
  CHECK(first_hash != other_hash);
  CHECK_THAT(err, Catch::Matchers::Contains(state_dir) &&
                      Catch::Matchers::Contains("config hash " + first_hash) &&
                      Catch::Matchers::Contains("this config's hash is " + other_hash) &&
                      Catch::Matchers::Contains("--discard-state"));
  CHECK(StateStored(state_dir));  // a refused start changes nothing

  Job fresh_job = job;
  fresh_job.port_file = job.dir + "/fresh.ports";  // the killed one's file is still there
  auto fresh = Subprocess::Spawn(kBinary,
                                 {"--config", other, "--listen", "127.0.0.1:0", "--port-file",
                                  fresh_job.port_file, "--discard-state"},
                                 job.dir + "/fresh");
  REQUIRE(fresh.ok());
  auto fresh_stub = Dial(Ports(fresh_job, **fresh).at("grpc"));
  CHECK_THAT((*fresh)->ReadStderr(),
             Catch::Matchers::Contains("dropping the coordinator state stored in " + state_dir));
  v1::RegisterServerResponse again;
  REQUIRE(RegisterServer(*fresh_stub, &again).ok());
  CHECK(again.server_id() == 0);
  CHECK(again.map().version() == 2);  // a new job
}

}  // namespace
}  // namespace cairn
