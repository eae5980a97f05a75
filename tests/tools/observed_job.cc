#include "tests/tools/observed_job.h"

#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/coordinator_client.h"
#include "common/status_macros.h"

namespace cairn::testing {
namespace {

// Checkpoints every 500 clocks, so the checkpoint metrics are live too.
std::string JobYaml(int num_servers, const std::string& checkpoint_dir) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", num_servers, R"(
  workers: 1
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 60s
rpc:
  deadline: 20s
consistency:
  mode: bsp
training:
  model: mlp
  layers: [784, 32, 10]
  batch_size: 64
  epochs: 1000
  seed: 1
  data_dir: /usr/share/datasets/fashion-mnist
  device: cpu
checkpoint:
  dir: )", checkpoint_dir, R"(
  every_clocks: 500
  keep: 2
)");
}

// The port of the worker's /metrics, once the coordinator lists it.
absl::StatusOr<int> WorkerMetricsPort(const std::string& coordinator, Subprocess* worker,
                                      absl::Time deadline) {
  CoordinatorClient client(coordinator, 64 << 20);
  while (absl::Now() < deadline) {
    if (!worker->Running()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cairn-worker ended before registering: ", worker->ReadStderr()));
    }
    absl::StatusOr<v1::ListMembersResponse> members = client.ListMembers(absl::Seconds(5));
    if (members.ok()) {
      for (const v1::Member& m : members->members()) {
        if (m.role() != v1::MEMBER_ROLE_WORKER || m.metrics_address().empty()) continue;
        const std::string& address = m.metrics_address();
        int port = 0;
        if (absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) return port;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError("the worker did not register its /metrics in time");
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObservedJob>> ObservedJob::Start(const std::string& name,
                                                                int num_servers) {
  auto job = std::make_unique<ObservedJob>();
  ASSIGN_OR_RETURN(std::string checkpoint_dir, MakeTempDir(name + "_checkpoints"));
  ASSIGN_OR_RETURN(job->cluster_, TestCluster::Start(name, JobYaml(num_servers, checkpoint_dir),
                                                     num_servers));
  TestCluster& cluster = *job->cluster_;
  ASSIGN_OR_RETURN(job->worker_,
                   Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-worker",
                                     {"--config", cluster.config_path(), "--coordinator",
                                      cluster.coordinator_address(), "--worker-id", "0"},
                                     cluster.dir() + "/worker0"));
  const absl::Time deadline = absl::Now() + absl::Seconds(90);
  ASSIGN_OR_RETURN(int worker_port,
                   WorkerMetricsPort(cluster.coordinator_address(), job->worker_.get(), deadline));

  job->endpoints_.push_back({"coordinator", 0, cluster.coordinator_metrics_port()});
  for (int i = 0; i < cluster.num_servers(); ++i) {
    job->endpoints_.push_back({"server", i, cluster.server_metrics_port(i)});
  }
  job->endpoints_.push_back({"worker", 0, worker_port});

  // Training has begun once the worker counted a step.
  while (true) {
    absl::StatusOr<std::string> body = HttpGet(worker_port, "/metrics");
    if (body.ok()) {
      absl::StatusOr<double> steps = MetricValue(*body, "cairn_worker_steps_total");
      if (steps.ok() && *steps >= 1) break;
    }
    if (!job->worker_->Running() || absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the worker completed no step in time\n", job->Logs()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return job;
}

std::string ObservedJob::Logs() const {
  std::string worker = worker_ == nullptr ? "" : worker_->ReadStderr();
  if (worker.size() > 3000) worker = worker.substr(worker.size() - 3000);
  return absl::StrCat(cluster_->Logs(), "\n--- worker stderr:\n", worker);
}

}  // namespace cairn::testing
