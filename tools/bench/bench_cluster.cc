#include "tools/bench/bench_cluster.h"

#include "absl/strings/str_cat.h"
#include "common/config/units.h"
#include "common/status_macros.h"

namespace cairn::bench {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kStopGrace = absl::Seconds(5);

}  // namespace

std::string BenchJobYaml(const std::string& request_split,
                         const std::string& shared_memory_split, absl::Duration busy_poll,
                         const std::string& push_ack) {
  std::string rpc_lines =  // under rpc:, beside the sizes below
      shared_memory_split.empty()
          ? std::string()
          : absl::StrCat("  shared_memory_split_size: ", shared_memory_split, "\n");
  if (busy_poll > absl::ZeroDuration()) {
    absl::StrAppend(&rpc_lines, "  busy_poll: ", FormatDurationForConfig(busy_poll), "\n");
  }
  if (!push_ack.empty()) absl::StrAppend(&rpc_lines, "  push_ack: ", push_ack, "\n");
  return absl::StrCat(R"(# Written by cairn-bench: 1 coordinator, 1 server, 1 worker on loopback.
cluster:
  coordinator: "127.0.0.1:1"  # unused: --listen and --coordinator override it
  servers: 1
  workers: 1
  partitions: 16
  lease_timeout: 10s
  heartbeat_interval: 500ms
  startup_timeout: 60s
  # Up for each measuring process in turn (Cairn-shm, then Cairn-gRPC).
  exit_when_done: false
rpc:
  max_message_size: )", kBenchMaxMessageBytes, R"(
  request_split_size: )", request_split.empty() ? "1MiB" : request_split, R"(
  # Room for Cairn-shm-lent's buffers (16 MiB each, and a lent buffer
  # holds at most a quarter of the region); pages are touched as used.
  shared_memory_size: 256MiB
)", rpc_lines, R"(  deadline: 60s
consistency:
  mode: asp
metrics:
  host: 127.0.0.1
  port: 0
tables:
  - name: )", kDense1MiB, R"(
    kind: dense
    shape: [)", kDense1MiBFloats, R"(]
    optimizer: {type: sgd, learning_rate: 0.001}
    init: {type: zeros}
  - name: )", kDense1MiBBf16, R"(
    kind: dense
    shape: [)", kDense1MiBFloats, R"(]
    wire_dtype: bf16
    optimizer: {type: sgd, learning_rate: 0.001}
    init: {type: zeros}
  - name: )", kDense16MiB, R"(
    kind: dense
    shape: [)", kDense16MiBFloats, R"(]
    optimizer: {type: sgd, learning_rate: 0.001}
    init: {type: zeros}
  - name: )", kSparse, R"(
    kind: sparse
    width: )", kSparseWidth, R"(
    optimizer: {type: sgd, learning_rate: 0.001}
    init: {type: zeros}
)");
}

absl::StatusOr<std::unique_ptr<BenchCluster>> BenchCluster::Start(
    const std::string& bin_dir, const std::string& run_dir, const std::string& yaml,
    const std::vector<std::string>& daemon_flags) {
  auto cluster = std::unique_ptr<BenchCluster>(new BenchCluster());
  const std::string config = run_dir + "/job.yaml";
  RETURN_IF_ERROR(WriteTextFile(config, yaml));

  const std::string coordinator_ports = run_dir + "/coordinator.ports";
  std::vector<std::string> coordinator_args = {"--config",    config, "--listen",
                                               "127.0.0.1:0", "--port-file", coordinator_ports,
                                               "--log-level", "warn"};
  coordinator_args.insert(coordinator_args.end(), daemon_flags.begin(), daemon_flags.end());
  ASSIGN_OR_RETURN(cluster->coordinator_,
                   ChildProcess::Spawn(bin_dir + "/cairn-coordinator", coordinator_args,
                                       run_dir + "/coordinator"));
  absl::StatusOr<std::map<std::string, int>> ports =
      WaitForPortFile(coordinator_ports, kStartTimeout, cluster->coordinator_.get());
  RETURN_IF_ERROR(Annotate(ports.status(), "starting cairn-coordinator"));
  cluster->coordinator_address_ = absl::StrCat("127.0.0.1:", (*ports)["grpc"]);

  const std::string server_ports = run_dir + "/server.ports";
  std::vector<std::string> server_args = {"--config",      config,
                                          "--coordinator", cluster->coordinator_address_,
                                          "--listen",      "127.0.0.1:0",
                                          "--port-file",   server_ports,
                                          "--log-level",   "warn"};
  server_args.insert(server_args.end(), daemon_flags.begin(), daemon_flags.end());
  ASSIGN_OR_RETURN(cluster->server_, ChildProcess::Spawn(bin_dir + "/cairn-server", server_args,
                                                         run_dir + "/server"));
  RETURN_IF_ERROR(
      Annotate(WaitForPortFile(server_ports, kStartTimeout, cluster->server_.get()).status(),
               "starting cairn-server"));
  return cluster;
}

absl::Status BenchCluster::Stop() {
  absl::Status first;
  if (server_ != nullptr) first.Update(server_->Stop(kStopGrace));
  if (coordinator_ != nullptr) first.Update(coordinator_->Stop(kStopGrace));
  server_.reset();
  coordinator_.reset();
  return first;
}

}  // namespace cairn::bench
