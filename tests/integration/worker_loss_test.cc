// Losing a worker process for real (SIGKILL, no clean leave) with real
// cairn-worker processes training the MLP on Fashion-MNIST:
//   - BSP, 3 workers: the other two continue within lease timeout + 1 s and
//     finish; nothing hangs.
//   - Field case B16 (ASP, 2 servers, 4 workers, heartbeat 1 s, lease 3 s,
//     SIGKILL worker 3 at update 50): with cluster.on_worker_loss: fail the
//     coordinator ends the job non-zero within 5 s naming worker 3; with
//     continue the others finish and the loss is in the coordinator's metric
//     and its closing job summary.
#include <signal.h>

#include <catch2/catch.hpp>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::Subprocess;
using testing::TestCluster;

struct JobShape {
  int servers = 2;
  int workers = 3;
  const char* mode = "bsp";
  const char* lease = "2s";
  const char* heartbeat = "200ms";
  const char* on_worker_loss = "continue";
  int64_t max_steps = 400;
};

std::string JobYaml(const JobShape& j) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", j.servers, R"(
  workers: )", j.workers, R"(
  partitions: 8
  lease_timeout: )", j.lease, R"(
  heartbeat_interval: )", j.heartbeat, R"(
  startup_timeout: 60s
  on_worker_loss: )", j.on_worker_loss, R"(
rpc:
  deadline: 60s
consistency:
  mode: )", j.mode, R"(
training:
  layers: [784, 32, 10]
  batch_size: 32
  epochs: 1
  max_steps: )", j.max_steps, R"(
  seed: 1
  data_dir: /usr/share/datasets/fashion-mnist
  device: cpu
  optimizer: {type: sgd, learning_rate: 0.05}
metrics:
  host: 127.0.0.1
  port: 0
)");
}

// A cairn-worker process and the port of its /metrics.
struct Worker {
  std::unique_ptr<Subprocess> process;
  int metrics_port = 0;
};

Worker StartWorker(const TestCluster& cluster, int id) {
  const std::string prefix = absl::StrCat(cluster.dir(), "/worker", id);
  auto p = Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-worker",
                             {"--config", cluster.config_path(), "--coordinator",
                              cluster.coordinator_address(), "--worker-id", absl::StrCat(id),
                              "--summary", prefix + ".json", "--metrics-port", "0"},
                             prefix);
  REQUIRE(p.ok());
  return Worker{*std::move(p), 0};
}

// Reads the worker's /metrics port from its "metrics on http://HOST:PORT/metrics" line.
void FindMetricsPort(Worker* w) {
  REQUIRE((*w).process->WaitForStderr("/metrics", absl::Seconds(60)).ok());
  std::smatch m;
  const std::string log = w->process->ReadStderr();
  REQUIRE(std::regex_search(log, m, std::regex("metrics on http://[0-9.]+:([0-9]+)/metrics")));
  REQUIRE(absl::SimpleAtoi(m[1].str(), &w->metrics_port));
}

// cairn_worker_steps_total of a worker, or -1 when it cannot be read.
double Steps(const Worker& w) {
  auto body = testing::HttpGet(w.metrics_port, "/metrics");
  if (!body.ok()) return -1;
  auto v = testing::MetricValue(*body, "cairn_worker_steps_total");
  return v.ok() ? *v : -1;
}

// Waits until `w` has done at least `steps` steps; false after `timeout`.
bool WaitForSteps(const Worker& w, double steps, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (Steps(w) >= steps) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

double CoordinatorMetric(TestCluster& cluster, const std::string& series) {
  auto body = testing::HttpGet(cluster.coordinator_metrics_port(), "/metrics");
  if (!body.ok()) return -1;
  auto v = testing::MetricValue(*body, series);
  return v.ok() ? *v : -1;
}

}  // namespace

TEST_CASE("BSP: after kill -9 of one worker the other two continue within the lease and finish",
          "[integration][membership][slow]") {
  JobShape shape;  // 2 servers, 3 workers, BSP, lease 2 s, heartbeat 200 ms
  auto cluster = TestCluster::Start("kill_bsp", JobYaml(shape), shape.servers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::vector<Worker> workers;
  for (int i = 0; i < shape.workers; ++i) workers.push_back(StartWorker(**cluster, i));
  for (Worker& w : workers) FindMetricsPort(&w);
  INFO((*cluster)->Logs() << "\n--- worker 0:\n" << workers[0].process->ReadStderr());
  REQUIRE(WaitForSteps(workers[2], 100, absl::Seconds(90)));

  workers[2].process->Kill();  // SIGKILL: no leave, no more heartbeats
  const absl::Time killed = absl::Now();
  const double at_kill = Steps(workers[0]);
  // Until the lease expires, worker 0 can finish at most the step it is in;
  // three more steps show the barrier no longer waits for worker 2.
  const absl::Duration lease = absl::Seconds(2);
  const bool resumed = WaitForSteps(workers[0], at_kill + 3, lease + absl::Seconds(1));
  const absl::Duration took = absl::Now() - killed;
  INFO("worker 0 was at step " << at_kill << " at the kill; " << absl::FormatDuration(took));
  CHECK(resumed);
  WARN("worker 0 resumed " << absl::FormatDuration(took) << " after the kill");
  for (int i = 0; i < 2; ++i) {
    auto ended = workers[i].process->Wait(absl::Seconds(60));
    INFO(workers[i].process->ReadStderr());
    REQUIRE(ended.ok());
    CHECK(ended->code == 0);
  }
  CHECK(CoordinatorMetric(**cluster, "cairn_coordinator_lease_expirations_total{role=\"worker\"}") ==
        1);
}

TEST_CASE("B16: ASP with on_worker_loss fail ends the job non-zero within 5 s naming worker 3",
          "[integration][membership][cases][slow]") {
  JobShape shape{2, 4, "asp", "3s", "1s", "fail", 3000};
  auto cluster = TestCluster::Start("b16_fail", JobYaml(shape), shape.servers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::vector<Worker> workers;
  for (int i = 0; i < shape.workers; ++i) workers.push_back(StartWorker(**cluster, i));
  for (Worker& w : workers) FindMetricsPort(&w);
  REQUIRE(WaitForSteps(workers[3], 50, absl::Seconds(90)));
  workers[3].process->Kill();
  const absl::Time killed = absl::Now();
  // Dead after at most lease (3 s) + one heartbeat (1 s); the job fails at once.
  auto ended = (*cluster)->coordinator().Wait(absl::Seconds(5));
  INFO((*cluster)->Logs());
  REQUIRE(ended.ok());
  CHECK(absl::Now() - killed <= absl::Seconds(5));
  CHECK(ended->code == 6);
  const std::string log = (*cluster)->coordinator().ReadStderr();
  CHECK_THAT(log, Catch::Contains("worker 3 lost at clock"));
  CHECK_THAT(log, Catch::Contains("cluster.on_worker_loss is fail: failing the job"));
}

TEST_CASE("B16: ASP with on_worker_loss continue finishes and records the loss",
          "[integration][membership][cases][slow]") {
  JobShape shape{2, 4, "asp", "3s", "1s", "continue", 600};
  auto cluster = TestCluster::Start("b16_continue", JobYaml(shape), shape.servers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::vector<Worker> workers;
  for (int i = 0; i < shape.workers; ++i) workers.push_back(StartWorker(**cluster, i));
  for (Worker& w : workers) FindMetricsPort(&w);
  REQUIRE(WaitForSteps(workers[3], 50, absl::Seconds(90)));
  workers[3].process->Kill();
  const absl::Time killed = absl::Now();
  const std::string lost = "cairn_coordinator_lease_expirations_total{role=\"worker\"}";
  while (CoordinatorMetric(**cluster, lost) < 1 && absl::Now() - killed < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  INFO((*cluster)->Logs());
  CHECK(absl::Now() - killed <= absl::Seconds(4) + absl::Milliseconds(500));
  CHECK(CoordinatorMetric(**cluster, lost) == 1);
  CHECK(CoordinatorMetric(**cluster, "cairn_coordinator_members{role=\"worker\",state=\"dead\"}") ==
        1);
  for (int i = 0; i < 3; ++i) {
    auto ended = workers[i].process->Wait(absl::Seconds(90));
    INFO(workers[i].process->ReadStderr());
    REQUIRE(ended.ok());
    CHECK(ended->code == 0);
  }
  REQUIRE((*cluster)->coordinator().Signal(SIGTERM).ok());
  auto ended = (*cluster)->coordinator().Wait(absl::Seconds(10));
  REQUIRE(ended.ok());
  CHECK(ended->code == 0);
  const std::string log = (*cluster)->coordinator().ReadStderr();
  CHECK_THAT(log, Catch::Contains("worker 3 lost at clock"));
  CHECK_THAT(log, Catch::Contains("its data shard is unfinished"));
  CHECK_THAT(log, Catch::Contains("job summary: workers finished [0, 1, 2]; workers lost "
                                  "[worker 3 at clock"));
}

}  // namespace cairn
