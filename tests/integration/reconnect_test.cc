// Field case C07: after a server restart, a client must not stay
// UNAVAILABLE for tens of seconds because gRPC's reconnect backoff grew
// while the server was down. A server is SIGKILLed; a client on Cairn's
// channel (common/grpc_util.h MakeChannel, as workers and servers use it)
// keeps calling it for 20 s, long enough for an uncapped backoff to reach
// tens of seconds; a new server starts on the same address. A worker dials
// a server that registered again on a fresh channel (the map shows a new
// id or incarnation): that answers within 5 s of the new server's port
// file. The channel that kept failing answers within 10 s (its backoff is
// capped at 1 s; uncapped, it would be tens of seconds).
//
// And the other side of a reused address: a server killed while the map
// still lists it, whose port the kernel gives to its replacement. The
// worker's requests for the killed server reach the replacement, which
// holds none of its partitions; it refuses them as UNAVAILABLE (each names
// the server it was routed to), and the worker retries until the map
// promotes the backups, instead of failing on "does not hold".
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/grpc_util.h"
#include "tests/integration/client_threads.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::Subprocess;
using testing::TestCluster;

constexpr char kYaml[] = R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: 1
  partitions: 4
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 120s
tables:
  - name: w
    kind: dense
    shape: [64]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
metrics:
  host: 127.0.0.1
  port: 0
)";

// A cairn-server on `port` (0: any) of loopback; writes `port_file`.
std::unique_ptr<Subprocess> StartServer(const TestCluster& cluster, int port,
                                        const std::string& port_file, const std::string& log) {
  auto p = Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-server",
                             {"--config", cluster.config_path(), "--coordinator",
                              cluster.coordinator_address(), "--listen",
                              absl::StrCat("127.0.0.1:", port), "--port-file", port_file},
                             log);
  REQUIRE(p.ok());
  return *std::move(p);
}

// A loopback port below the kernel's ephemeral range that is free now.
// The test restarts a server on the port of one it killed; a port from
// the ephemeral range could meanwhile be handed to another process's
// outgoing connection or port-0 listener, and the restart would fail to
// bind. Ports below the range are only taken by explicit binds.
int FreePortBelowEphemeralRange() {
  int low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low;
  REQUIRE(low > 11000);
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(10000, low - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(random);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (free) return port;
  }
  FAIL("no free loopback port below " << low << " in 200 tries");
  return 0;
}

bool Answered(v1::ParameterService::Stub& stub, std::string* error = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(500)));
  v1::StatsResponse response;
  const grpc::Status s = stub.Stats(&context, v1::StatsRequest(), &response);
  if (!s.ok() && error != nullptr) *error = s.error_message();
  return s.ok();
}

}  // namespace

TEST_CASE("C07: a server restarted on the same address after 20 s of failed calls is reached "
          "within 5 s on a fresh channel and within 10 s on the old one",
          "[integration][cases]") {
  auto cluster = TestCluster::Start("reconnect", kYaml, 0);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const std::string dir = (*cluster)->dir();
  const int port = FreePortBelowEphemeralRange();
  auto first = StartServer(**cluster, port, dir + "/first.ports", dir + "/first");
  auto ports = testing::ReadPortFile(dir + "/first.ports", absl::Seconds(30), first.get());
  INFO(ports.status().message());
  REQUIRE(ports.ok());
  REQUIRE((*ports)["grpc"] == port);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto stub = v1::ParameterService::NewStub(
      MakeChannel(address, 64 << 20, /*dead_after=*/absl::Seconds(2)));
  REQUIRE(Answered(*stub));

  first->Kill();
  const absl::Time down_until = absl::Now() + absl::Seconds(20);
  int failed = 0;
  while (absl::Now() < down_until) {
    if (!Answered(*stub)) ++failed;
    absl::SleepFor(absl::Milliseconds(100));
  }
  CHECK(failed > 50);

  auto second = StartServer(**cluster, port, dir + "/second.ports", dir + "/second");
  auto second_ports =
      testing::ReadPortFile(dir + "/second.ports", absl::Seconds(30), second.get());
  INFO(second_ports.status().message());
  REQUIRE(second_ports.ok());
  const absl::Time back = absl::Now();
  // What a worker does when the map shows the server back (a new id, or a
  // new incarnation under its id: worker/client InstallMap): a fresh channel.
  auto fresh = v1::ParameterService::NewStub(
      MakeChannel(address, 64 << 20, /*dead_after=*/absl::Seconds(2)));
  std::string fresh_error;
  bool fresh_answered = false;
  while (!fresh_answered && absl::Now() < back + absl::Seconds(30)) {
    fresh_answered = Answered(*fresh, &fresh_error);
    if (!fresh_answered) absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Duration fresh_took = absl::Now() - back;
  // The channel that failed for 20 s: its backoff is capped at 1 s, so it
  // is back within seconds too, not after a backoff grown to tens of them.
  bool answered = false;
  std::string last_error;
  while (!answered && absl::Now() < back + absl::Seconds(30)) {
    answered = Answered(*stub, &last_error);
    if (!answered) absl::SleepFor(absl::Milliseconds(50));
  }
  const absl::Duration took = absl::Now() - back;
  INFO("after the new server's port file: a fresh channel answered in "
       << absl::FormatDuration(fresh_took) << " (" << fresh_error << "), the old one in "
       << absl::FormatDuration(took) << " (last error: " << last_error << ")\n"
       << (*cluster)->Logs() << "\n--- second server:\n" << second->ReadStderr());
  CHECK(fresh_answered);
  CHECK(fresh_took < absl::Seconds(5));
  CHECK(answered);
  CHECK(took < absl::Seconds(10));
}

TEST_CASE("a replacement given a killed server's port before its lease ends refuses the "
          "requests meant for it, which the worker retries on the promoted backups",
          "[integration][failover]") {
  // Twelve chunks over twelve partitions, each group on a primary and a
  // backup of three servers; a lease long enough that the worker's map
  // lists server 1 for seconds after it is killed.
  constexpr char kReplicatedYaml[] = R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 3
  workers: 1
  partitions: 12
  replication: 2
  lease_timeout: 6s
  heartbeat_interval: 200ms
  startup_timeout: 60s
consistency:
  mode: asp
tables:
  - name: w
    kind: dense
    shape: [1200]
    chunk_size: 100
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)";
  auto cluster = TestCluster::Start("port_reuse", kReplicatedYaml, 3);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  absl::StatusOr<std::vector<std::unique_ptr<Client>>> clients =
      testing::ConnectWorkers(c, 1, /*cache_bytes=*/0);
  INFO(clients.status().message());
  REQUIRE(clients.ok());
  Client& client = *clients->front();
  const std::vector<float> ones(1200, 1.0f);
  REQUIRE(client.PushDense({{"w", ones}}).get().ok());
  std::vector<float> w(1200, 0.0f);
  REQUIRE(client.PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  REQUIRE(w == std::vector<float>(1200, -1.0f));

  const std::string address = c.server_address(1);
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  c.server(1).Kill();
  const absl::Status replaced = c.StartServer({}, {}, "", port);  // server 3
  INFO(replaced.message() << c.Logs());
  REQUIRE(replaced.ok());
  REQUIRE(c.server_address(3) == address);

  // Server 1's partitions are reached at its address, where server 3 now
  // answers, until the map promotes their backups (its lease: 6 s).
  std::fill(w.begin(), w.end(), 0.0f);
  const absl::Status pulled = client.PullDense({{"w", absl::MakeSpan(w)}}).get();
  INFO(pulled.message() << c.Logs());
  REQUIRE(pulled.ok());
  CHECK(w == std::vector<float>(1200, -1.0f));
  REQUIRE(client.PushDense({{"w", ones}}).get().ok());
  REQUIRE(client.PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  CHECK(w == std::vector<float>(1200, -2.0f));  // the push applied once
  INFO(c.Logs());
  CHECK(absl::StrContains(c.coordinator().ReadStderr(),
                          absl::StrCat("server 3 registered at ", address)));
  CHECK(absl::StrContains(c.server(3).ReadStderr(),
                          "server 3 received a request routed to server 1"));
  CHECK(client.Finish().ok());
}

}  // namespace cairn
