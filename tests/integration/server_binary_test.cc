// cairn-server as a user meets it: --help, a bad config, a coordinator that
// never answers, a port already taken. Each ends fast with a clear message
// and its documented exit code; none hangs or aborts.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::MakeTempDir;
using testing::Subprocess;
using testing::WriteFile;

constexpr char kServer[] = CAIRN_BINARY_DIR "/bin/cairn-server";

std::string GoodYaml(int startup_seconds) {
  return absl::StrCat(R"(cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: 1
  startup_timeout: )", startup_seconds, R"(s
tables:
  - name: w
    kind: dense
    shape: [4]
    optimizer: {type: sgd, learning_rate: 0.1}
)");
}

// A listening socket on a free loopback port; returns the fd and sets *port.
int ListenOnFreePort(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(listen(fd, 4) == 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

testing::ExitStatus RunToEnd(const std::vector<std::string>& args, const std::string& log,
                             std::string* err, absl::Duration timeout = absl::Seconds(20)) {
  auto p = Subprocess::Spawn(kServer, args, log);
  REQUIRE(p.ok());
  auto ended = (*p)->Wait(timeout);
  INFO("cairn-server did not end in time");
  REQUIRE(ended.ok());
  *err = (*p)->ReadStderr() + (*p)->ReadStdout();
  return *ended;
}

TEST_CASE("cairn-server --help prints usage and exits 0", "[integration][binary]") {
  auto dir = MakeTempDir("server_help");
  REQUIRE(dir.ok());
  std::string out;
  testing::ExitStatus s = RunToEnd({"--help"}, *dir + "/help", &out);
  CHECK(s.code == 0);
  CHECK_THAT(out, Catch::Contains("--config"));
}

TEST_CASE("cairn-server names file, line and column of a bad config and exits 2",
          "[integration][binary]") {
  auto dir = MakeTempDir("server_bad_config");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", "cluster:\n  servers: 1\n  srevers: 2\n").ok());
  std::string err;
  testing::ExitStatus s = RunToEnd({"--config", *dir + "/job.yaml"}, *dir + "/server", &err);
  CHECK(s.code == 2);
  CHECK_THAT(err, Catch::Contains("job.yaml:3:3"));
  CHECK_THAT(err, Catch::Contains("srevers"));
}

TEST_CASE("cairn-server refuses a cold-tier memory budget it cannot read or below 4MiB, "
          "naming the flag, and exits 2",
          "[integration][binary]") {
  auto dir = MakeTempDir("server_cold_memory");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(2)).ok());
  for (const std::string bad : {"1MiB", "lots"}) {
    std::string err;
    testing::ExitStatus s = RunToEnd({"--config", *dir + "/job.yaml", "--cold-memory", bad},
                                     *dir + "/server-" + bad, &err);
    CHECK(s.code == 2);
    CHECK_THAT(err, Catch::Contains("--cold-memory " + bad));
  }
}

TEST_CASE("cairn-server gives up on an unreachable coordinator after startup_timeout",
          "[integration][binary]") {
  auto dir = MakeTempDir("server_unreachable");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(2)).ok());
  const absl::Time start = absl::Now();
  std::string err;
  testing::ExitStatus s = RunToEnd(
      {"--config", *dir + "/job.yaml", "--coordinator", "127.0.0.1:9", "--listen", "127.0.0.1:0"},
      *dir + "/server", &err);
  CHECK(s.code == 4);
  CHECK_THAT(err, Catch::Contains("127.0.0.1:9"));
  CHECK(absl::Now() - start < absl::Seconds(15));
}

TEST_CASE("cairn-server stopped while it waits for its coordinator exits 0 at once",
          "[integration][binary]") {
  auto dir = MakeTempDir("server_stop_waiting");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(120)).ok());
  // Unreachable (registration retries), and a name that does not resolve
  // (resolution retries first).
  const struct {
    const char* coordinator;
    const char* says;
  } waits[] = {{"127.0.0.1:9", "before registering; stopping"},
               {"cairn-no-such-host.invalid:9", "while the coordinator's name does not resolve"}};
  for (const auto& w : waits) {
    auto p = Subprocess::Spawn(kServer,
                               {"--config", *dir + "/job.yaml", "--coordinator", w.coordinator,
                                "--listen", "127.0.0.1:0"},
                               *dir + "/server-" + w.coordinator);
    REQUIRE(p.ok());
    absl::SleepFor(absl::Seconds(1));
    const absl::Time asked = absl::Now();
    REQUIRE((*p)->Signal(SIGTERM).ok());
    absl::StatusOr<testing::ExitStatus> s = (*p)->Wait(absl::Seconds(20));
    REQUIRE(s.ok());
    INFO(w.coordinator << ": " << (*p)->ReadStderr());
    CHECK(s->ToString() == "exit code 0");
    CHECK(absl::Now() - asked < absl::Seconds(5));
    CHECK_THAT((*p)->ReadStderr(), Catch::Contains(w.says));
  }
}

TEST_CASE("a server started with other overrides than its coordinator's warns naming both "
          "config hashes",
          "[integration][binary]") {
  auto dir = MakeTempDir("server_config_hash");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(60)).ok());
  auto coordinator = Subprocess::Spawn(
      CAIRN_BINARY_DIR "/bin/cairn-coordinator",
      {"--config", *dir + "/job.yaml", "--listen", "127.0.0.1:0", "--port-file",
       *dir + "/coordinator.ports", "--set", "training.epochs=30"},
      *dir + "/coordinator");
  REQUIRE(coordinator.ok());
  auto ports = ReadPortFile(*dir + "/coordinator.ports", absl::Seconds(30), coordinator->get());
  REQUIRE(ports.ok());
  auto server = Subprocess::Spawn(
      kServer,
      {"--config", *dir + "/job.yaml", "--coordinator",
       absl::StrCat("127.0.0.1:", (*ports)["grpc"]), "--listen", "127.0.0.1:0"},
      *dir + "/server");
  REQUIRE(server.ok());
  const absl::Status warned =
      (*server)->WaitForStderr("and the coordinator ", absl::Seconds(30));
  const std::string err = (*server)->ReadStderr();
  INFO(err << (*coordinator)->ReadStderr());
  REQUIRE(warned.ok());
  CHECK_THAT(err, Catch::Contains("server 0 runs config hash ") &&
                      Catch::Contains(": they were started with different job files or --set "
                                      "overrides") &&
                      Catch::Contains(" W server 0 runs config hash "));
  (*server)->Kill();
  (*coordinator)->Kill();
}

TEST_CASE("cairn-server refuses a port already taken and exits 3", "[integration][binary]") {
  auto dir = MakeTempDir("server_port_taken");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(2)).ok());
  int port = 0;
  const int fd = ListenOnFreePort(&port);
  std::string err;
  testing::ExitStatus s = RunToEnd({"--config", *dir + "/job.yaml", "--listen",
                                    absl::StrCat("127.0.0.1:", port)},
                                   *dir + "/server", &err);
  close(fd);
  CHECK(s.code == 3);
  CHECK_THAT(err, Catch::Contains(absl::StrCat("cannot listen on 127.0.0.1:", port,
                                               ": the port is taken")));
  // One line of ours, not gRPC's log of its failed bind.
  CHECK_THAT(err, !Catch::Contains("chttp2_server"));
}

TEST_CASE("cairn-server refuses to advertise an address remote peers cannot dial (B20)",
          "[integration][binary][cases]") {
  auto dir = MakeTempDir("server_advertise");
  REQUIRE(dir.ok());
  REQUIRE(WriteFile(*dir + "/job.yaml", GoodYaml(2)).ok());
  std::string err;
  SECTION("a loopback address with a remote coordinator") {
    testing::ExitStatus s = RunToEnd({"--config", *dir + "/job.yaml", "--coordinator",
                                      "192.0.2.10:7070", "--listen", "127.0.0.1:0"},
                                     *dir + "/server", &err);
    CHECK(s.code == 2);
    CHECK_THAT(err, Catch::Contains("would advertise 127.0.0.1"));
    CHECK_THAT(err, Catch::Contains("--advertise"));
  }
  SECTION("the unspecified address") {
    testing::ExitStatus s = RunToEnd(
        {"--config", *dir + "/job.yaml", "--listen", "0.0.0.0:0"}, *dir + "/server", &err);
    CHECK(s.code == 2);
    CHECK_THAT(err, Catch::Contains("would advertise 0.0.0.0"));
  }
}

}  // namespace
}  // namespace cairn
