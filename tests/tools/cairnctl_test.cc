// cairnctl status against a running job: --json lists every process and
// every partition exactly once; the text form shows the same; an unreachable
// or silent coordinator gives a clear error and exit code 4.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testing/process.h"
#include "tests/tools/observed_job.h"
#include "tests/tools/promtool_util.h"

namespace cairn {
namespace {

constexpr char kCairnctl[] = CAIRN_BINARY_DIR "/bin/cairnctl";

testing::CommandResult Cairnctl(const std::vector<std::string>& args) {
  std::vector<std::string> command = {kCairnctl};
  command.insert(command.end(), args.begin(), args.end());
  auto result = testing::RunCommand(command);
  INFO(result.status().message());
  REQUIRE(result.ok());
  return *result;
}

TEST_CASE("cairnctl status --json lists every process and every partition exactly once",
          "[tools][ctl]") {
  constexpr int kServers = 3;
  constexpr int kPartitions = 16;  // ObservedJob's
  auto job = testing::ObservedJob::Start("cairnctl", kServers);
  INFO(job.status().message());
  REQUIRE(job.ok());
  const std::string coordinator = (*job)->cluster().coordinator_address();

  const testing::CommandResult r = Cairnctl({"--coordinator", coordinator, "status", "--json"});
  INFO(r.output());
  INFO((*job)->Logs());
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);

  CHECK(j["coordinator"]["address"] == coordinator);
  // Each server id 0..2 and worker id 0 once, all alive, with their /metrics.
  std::map<std::string, std::multiset<int>> ids;
  for (const nlohmann::json& m : j["members"]) {
    ids[m["role"].get<std::string>()].insert(m["id"].get<int>());
    CHECK(m["state"] == "alive");
    CHECK(m["lease_age_ms"].get<int64_t>() >= 0);
    CHECK(m["lease_age_ms"].get<int64_t>() < 5000);  // within the 5 s lease
    CHECK_FALSE(m["metrics_address"].get<std::string>().empty());
  }
  CHECK(ids["server"] == std::multiset<int>{0, 1, 2});
  CHECK(ids["worker"] == std::multiset<int>{0});
  CHECK(ids.size() == 2);

  // Partitions 0..15 once each, each on a listed server; every server's
  // Stats agrees with the map.
  const nlohmann::json& map = j["partition_map"];
  CHECK(map["ready"] == true);
  CHECK(map["num_partitions"] == kPartitions);
  std::multiset<int> partitions;
  std::map<int, std::set<int>> by_primary;  // partitions each server holds: primary or backup
  for (const nlohmann::json& p : map["partitions"]) {
    partitions.insert(p["partition"].get<int>());
    const int primary = p["primary"].get<int>();
    CHECK(ids["server"].count(primary) == 1);
    by_primary[primary].insert(p["partition"].get<int>());
    for (const nlohmann::json& b : p["backups"]) {
      CHECK(b.get<int>() != primary);
      by_primary[b.get<int>()].insert(p["partition"].get<int>());
    }
  }
  std::multiset<int> expected;
  for (int p = 0; p < kPartitions; ++p) expected.insert(p);
  CHECK(partitions == expected);
  REQUIRE(j["servers"].size() == kServers);
  for (const nlohmann::json& s : j["servers"]) {
    INFO("server " << s["id"]);
    REQUIRE(s["ok"] == true);
    CHECK(s["map_version"] == map["version"]);
    const auto held = s["partitions"].get<std::vector<int>>();
    CHECK(std::set<int>(held.begin(), held.end()) == by_primary[s["id"].get<int>()]);
  }

  // The model's four tables, each with clocks the worker has reached.
  std::set<std::string> tables;
  for (const nlohmann::json& t : j["tables"]) {
    tables.insert(t["table"].get<std::string>());
    CHECK(t["min_clock"].get<int64_t>() >= 0);
    CHECK(t["max_clock"].get<int64_t>() >= t["min_clock"].get<int64_t>());
  }
  CHECK(tables == std::set<std::string>{"mlp.fc0.bias", "mlp.fc0.weight", "mlp.fc1.bias",
                                        "mlp.fc1.weight"});

  const testing::CommandResult text = Cairnctl({"--coordinator", coordinator, "status"});
  INFO(text.output());
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("MEMBERS") && Catch::Contains("PARTITION MAP") &&
                              Catch::Contains("mlp.fc0.weight"));

  // A server killed a moment ago is still listed alive (its lease has not
  // run out): its row says why it does not answer.
  (*job)->cluster().server(2).Kill();
  const testing::CommandResult gone =
      Cairnctl({"--coordinator", coordinator, "--timeout", "2s", "status"});
  INFO(gone.output());
  CHECK(gone.exit_code == 3);
  CHECK_THAT(gone.out, Catch::Contains("error: Stats of server 2 at ") &&
                           Catch::Contains("(the coordinator still lists it alive, its last "
                                           "heartbeat ") &&
                           Catch::Contains("a server that stopped is declared dead once its "
                                           "lease, cluster.lease_timeout, runs out"));
}

TEST_CASE("cairnctl status exits 4 naming the address when nothing listens", "[tools][ctl]") {
  const absl::StatusOr<int> free_port = testing::FreeLoopbackPort();
  REQUIRE(free_port.ok());
  const int port = *free_port;
  const std::string address = absl::StrCat("127.0.0.1:", port);

  const testing::CommandResult r = Cairnctl({"--coordinator", address, "status", "--json"});
  INFO(r.output());
  CHECK(r.exit_code == 4);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("cairnctl: cannot reach the coordinator at " + address));
}

TEST_CASE("cairnctl status exits 4 by its deadline when the coordinator never answers",
          "[tools][ctl]") {
  // Listens but never accepts: the TCP handshake completes in the kernel, the
  // gRPC handshake never does.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(listen(fd, 16) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string address = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));

  const absl::Time start = absl::Now();
  const testing::CommandResult r =
      Cairnctl({"--coordinator", address, "--timeout", "1s", "status"});
  const absl::Duration took = absl::Now() - start;
  close(fd);
  INFO(r.output());
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.err,
             Catch::Contains("cannot reach the coordinator at " + address + " (deadline 1s)"));
  CHECK(took < absl::Seconds(4));  // gRPC may give up before the deadline, never long after
}

TEST_CASE("cairnctl rejects a malformed coordinator address with exit 2", "[tools][ctl]") {
  const testing::CommandResult r = Cairnctl({"--coordinator", "10.0.0.300:7070", "status"});
  INFO(r.output());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--coordinator") && Catch::Contains("10.0.0.300"));
}

}  // namespace
}  // namespace cairn
