// A real Cairn cluster for integration tests: cairn-coordinator and N
// cairn-server processes on loopback, ports chosen at run time, logs in a
// temporary directory. Destroying it SIGKILLs whatever still runs.
#ifndef CAIRN_TESTS_INTEGRATION_TEST_CLUSTER_H_
#define CAIRN_TESTS_INTEGRATION_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/shard.pb.h"
#include "tests/testing/http_get.h"
#include "tests/testing/process.h"

namespace cairn::testing {

class TestCluster {
 public:
  // Variables ("NAME=value") added to the inherited environment of the
  // processes Start spawns, e.g. CAIRN_KILLPOINT for one process only
  // (common/killpoint.h). `servers[i]` is for the i-th server started;
  // servers beyond the vector get none.
  struct Env {
    std::vector<std::string> coordinator;
    std::vector<std::vector<std::string>> servers;
  };

  // Writes `yaml` to <tmp>/job.yaml and starts a coordinator and
  // `num_servers` servers from it; returns once every server wrote its port
  // file. The YAML's cluster.servers should equal num_servers. Servers start
  // one at a time, so the i-th registers as server id i in a fresh job.
  // Unless the YAML names cluster.exit_when_done, the coordinator (and every
  // server, so that they run one config hash) gets `--set
  // cluster.exit_when_done=false`: the cluster stays up for the test after
  // its workers leave, until the test ends it.
  // The coordinator and the servers listen on and advertise `host` (a
  // loopback address by default; tests/testing/netns.h gives a routable one).
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(const std::string& name,
                                                            const std::string& yaml,
                                                            int num_servers,
                                                            const Env& env = {},
                                                            const std::string& host = "127.0.0.1");

  const std::string& dir() const { return dir_; }
  const std::string& config_path() const { return config_; }
  const std::string& coordinator_address() const { return coordinator_address_; }
  Subprocess& coordinator() { return *coordinator_; }
  Subprocess& server(int i) { return *servers_[i]; }
  int num_servers() const { return static_cast<int>(servers_.size()); }

  // Starts one more server process (a late or restarted one), with `env`
  // ("NAME=value") added to its environment. A non-empty `command_prefix`
  // runs it through another program that execs it, e.g. nsenter into a
  // network namespace (NetnsPeer::EnterCommand); `host` (default: the
  // cluster's) is the address it listens on and advertises, and `port`
  // its gRPC port (0: one the kernel picks).
  absl::Status StartServer(const std::vector<std::string>& env = {},
                           const std::vector<std::string>& command_prefix = {},
                           const std::string& host = "", int port = 0);

  // Kills the coordinator with SIGKILL (kill -9) and returns how it ended.
  ExitStatus KillCoordinator();

  // Starts a coordinator again (after KillCoordinator or its own exit) from
  // the same config on the same gRPC address, so servers and workers reach
  // it where they dial; `extra_args` are added to its command line, `env`
  // ("NAME=value") to its environment. Returns once it serves (its port
  // file is written); coordinator() is then the new process and
  // coordinator_metrics_port() its /metrics. FailedPrecondition while the
  // coordinator still runs.
  absl::Status RestartCoordinator(const std::vector<std::string>& extra_args = {},
                                  const std::vector<std::string>& env = {});

  // Ports of /metrics.
  int coordinator_metrics_port() const { return coordinator_metrics_port_; }
  int server_metrics_port(int i) const { return server_metrics_ports_[i]; }
  // The gRPC address (host:port) the i-th server started listens on.
  const std::string& server_address(int i) const { return server_addresses_[i]; }

  // The tail of every process's stderr, for failure messages.
  std::string Logs() const;

 private:
  std::string dir_;
  std::string config_;
  std::string coordinator_address_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> old_coordinators_;  // killed or ended, oldest first
  std::vector<std::unique_ptr<Subprocess>> servers_;
  int coordinator_metrics_port_ = 0;
  std::vector<int> server_metrics_ports_;
  std::vector<std::string> server_addresses_;
  std::vector<std::string> coordinator_args_;  // extra flags, kept for a restart
  std::string host_;
};

// The body of http://127.0.0.1:port/path (tests/testing/http_get.h).
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// The value of the first sample in a Prometheus text exposition whose line
// starts with `series` (name plus labels as exposed), or NotFound.
absl::StatusOr<double> MetricValue(const std::string& exposition, const std::string& series);

// The Stats of every server in the coordinator's current partition map, in
// the map's order.
absl::StatusOr<std::vector<v1::StatsResponse>> StatsOfServers(const TestCluster& cluster);

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_INTEGRATION_TEST_CLUSTER_H_
