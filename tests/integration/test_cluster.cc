#include "tests/integration/test_cluster.h"

#include <grpcpp/grpcpp.h>

#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"

namespace cairn::testing {
namespace {

// Spawns `binary` directly, or through env(1) when `env` adds variables, or
// through `prefix` (whose first element is the program to run). env and the
// prefixes used (nsenter) exec the binary, so the pid stays the binary's.
absl::StatusOr<std::unique_ptr<Subprocess>> SpawnWithEnv(const std::string& binary,
                                                         const std::vector<std::string>& args,
                                                         const std::vector<std::string>& env,
                                                         const std::string& log_prefix,
                                                         const std::vector<std::string>& prefix = {}) {
  if (env.empty() && prefix.empty()) return Subprocess::Spawn(binary, args, log_prefix);
  std::vector<std::string> argv(prefix.begin(), prefix.end());
  if (!env.empty()) {
    argv.push_back("/usr/bin/env");
    argv.insert(argv.end(), env.begin(), env.end());
  }
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string program = argv.front();
  argv.erase(argv.begin());
  return Subprocess::Spawn(program, argv, log_prefix);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(const std::string& name,
                                                                const std::string& yaml,
                                                                int num_servers, const Env& env,
                                                                const std::string& host) {
  auto cluster = std::make_unique<TestCluster>();
  cluster->host_ = host;
  ASSIGN_OR_RETURN(cluster->dir_, MakeTempDir(name));
  cluster->config_ = cluster->dir_ + "/job.yaml";
  RETURN_IF_ERROR(WriteFile(cluster->config_, yaml));
  if (yaml.find("exit_when_done") == std::string::npos) {
    cluster->coordinator_args_ = {"--set", "cluster.exit_when_done=false"};
  }
  std::vector<std::string> args = {"--config", cluster->config_, "--listen", host + ":0",
                                   "--port-file", cluster->dir_ + "/coordinator.ports"};
  args.insert(args.end(), cluster->coordinator_args_.begin(), cluster->coordinator_args_.end());
  ASSIGN_OR_RETURN(cluster->coordinator_,
                   SpawnWithEnv(CAIRN_BINARY_DIR "/bin/cairn-coordinator", args,
                                env.coordinator, cluster->dir_ + "/coordinator"));
  ASSIGN_OR_RETURN(auto ports, ReadPortFile(cluster->dir_ + "/coordinator.ports",
                                            absl::Seconds(30), cluster->coordinator_.get()));
  cluster->coordinator_address_ = absl::StrCat(host, ":", ports["grpc"]);
  cluster->coordinator_metrics_port_ = ports["metrics"];
  for (int i = 0; i < num_servers; ++i) {
    RETURN_IF_ERROR(cluster->StartServer(i < static_cast<int>(env.servers.size())
                                             ? env.servers[i]
                                             : std::vector<std::string>{}));
  }
  return cluster;
}

absl::Status TestCluster::StartServer(const std::vector<std::string>& env,
                                      const std::vector<std::string>& command_prefix,
                                      const std::string& host, int port) {
  const int i = static_cast<int>(servers_.size());
  const std::string listen_host = host.empty() ? host_ : host;
  const std::string port_file = absl::StrCat(dir_, "/server", i, ".ports");
  std::vector<std::string> args = {"--config", config_, "--coordinator", coordinator_address_,
                                   "--listen", absl::StrCat(listen_host, ":", port),
                                   "--port-file", port_file};
  // The coordinator's overrides too: the job's processes run one config hash.
  args.insert(args.end(), coordinator_args_.begin(), coordinator_args_.end());
  ASSIGN_OR_RETURN(auto server, SpawnWithEnv(CAIRN_BINARY_DIR "/bin/cairn-server", args, env,
                                             absl::StrCat(dir_, "/server", i), command_prefix));
  servers_.push_back(std::move(server));
  ASSIGN_OR_RETURN(auto ports, ReadPortFile(port_file, absl::Seconds(30), servers_.back().get()));
  server_metrics_ports_.push_back(ports["metrics"]);
  server_addresses_.push_back(absl::StrCat(listen_host, ":", ports["grpc"]));
  return absl::OkStatus();
}

ExitStatus TestCluster::KillCoordinator() { return coordinator_->Kill(); }

absl::Status TestCluster::RestartCoordinator(const std::vector<std::string>& extra_args,
                                             const std::vector<std::string>& env) {
  if (coordinator_->Running()) {
    return absl::FailedPreconditionError("restart: the coordinator still runs");
  }
  const int n = static_cast<int>(old_coordinators_.size()) + 1;
  const std::string port_file = absl::StrCat(dir_, "/coordinator-", n, ".ports");
  std::vector<std::string> args = {"--config", config_, "--listen", coordinator_address_,
                                   "--port-file", port_file};
  args.insert(args.end(), coordinator_args_.begin(), coordinator_args_.end());
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  ASSIGN_OR_RETURN(auto next, SpawnWithEnv(CAIRN_BINARY_DIR "/bin/cairn-coordinator", args, env,
                                           absl::StrCat(dir_, "/coordinator-", n)));
  old_coordinators_.push_back(std::move(coordinator_));
  coordinator_ = std::move(next);
  ASSIGN_OR_RETURN(auto ports, ReadPortFile(port_file, absl::Seconds(30), coordinator_.get()));
  coordinator_metrics_port_ = ports["metrics"];
  return absl::OkStatus();
}

std::string TestCluster::Logs() const {
  auto tail = [](const std::string& s) {
    return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
  };
  std::string out;
  for (size_t i = 0; i < old_coordinators_.size(); ++i) {
    absl::StrAppend(&out, "--- coordinator (run ", i + 1, ") stderr:\n",
                    tail(old_coordinators_[i]->ReadStderr()), "\n");
  }
  absl::StrAppend(&out, "--- coordinator stderr:\n", tail(coordinator_->ReadStderr()));
  for (size_t i = 0; i < servers_.size(); ++i) {
    absl::StrAppend(&out, "\n--- server ", i, " stderr:\n", tail(servers_[i]->ReadStderr()));
  }
  return out;
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  return HttpGet("127.0.0.1", port, path);
}

absl::StatusOr<double> MetricValue(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (!absl::StartsWith(line, series) || line.size() <= series.size() ||
        line[series.size()] != ' ') {
      continue;
    }
    double v = 0;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
  }
  return absl::NotFoundError(absl::StrCat("no series ", series));
}

absl::StatusOr<std::vector<v1::StatsResponse>> StatsOfServers(const TestCluster& cluster) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  ASSIGN_OR_RETURN(v1::GetPartitionMapResponse map,
                   coordinator.GetPartitionMap(absl::Seconds(10)));
  std::vector<v1::StatsResponse> out;
  for (const v1::Member& m : map.map().servers()) {
    auto stub = v1::ParameterService::NewStub(MakeChannel(m.address(), 64 << 20));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    context.set_wait_for_ready(true);  // a failed first connection is tried again
    v1::StatsResponse stats;
    const grpc::Status s = stub->Stats(&context, v1::StatsRequest(), &stats);
    if (!s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("Stats of server ", m.id(), " at ", m.address(), ": ", s.error_message()));
    }
    out.push_back(std::move(stats));
  }
  return out;
}

}  // namespace cairn::testing
