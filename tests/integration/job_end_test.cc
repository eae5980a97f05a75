// How a job ends, with real processes (docs/deploy.md, "Job lifecycle" and
// "Exit codes"):
//   - Finished: every worker leaves; the coordinator takes a final
//     checkpoint, the servers exit 0 and the coordinator exits 0, all within
//     10 s of the last worker's exit (field case C06), three runs in a row.
//   - Every worker lost (kill -9): the coordinator exits 8 and the servers 10.
//   - Data lost (replication 1, no checkpoint, a server killed): the
//     coordinator exits 9 naming the groups, the other server 10.
//   - Bad identities (field case C04 and the issue's bad input): a second
//     worker claiming a live index exits 11 within 5 s naming the holder; an
//     index out of range exits 2 naming its variable; a coordinator name that
//     does not resolve exits 4.
//   - A worker that cannot train (no data files, layers that do not fit the
//     data) exits 2 naming the setting before it registers, so it holds no
//     place: a good worker under the same id runs the job to its end.
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::ExitStatus;
using testing::Subprocess;
using testing::TestCluster;

struct JobShape {
  int servers = 2;
  int workers = 2;
  int replication = 2;
  int64_t max_steps = 40;
  std::string checkpoint_dir;  // empty: none
};

std::string JobYaml(const JobShape& j) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", j.servers, R"(
  workers: )", j.workers, R"(
  replication: )", j.replication, R"(
  partitions: 8
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 60s
  exit_when_done: true
  shutdown_grace: 20s
consistency:
  mode: asp
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
)", j.checkpoint_dir.empty() ? "" : absl::StrCat("checkpoint:\n  dir: ", j.checkpoint_dir, "\n"));
}

// A cairn-worker with `env` ("NAME=value") added to its environment and
// `args` after the config; --coordinator names the cluster's unless `env`
// sets CAIRN_COORDINATOR.
std::unique_ptr<Subprocess> StartWorker(const TestCluster& cluster, const std::string& name,
                                        const std::vector<std::string>& env,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = env;
  // With CAIRN_ROLE set, through the `cairn` entry point.
  const bool by_role = std::find(env.begin(), env.end(), "CAIRN_ROLE=worker") != env.end();
  argv.push_back(by_role ? CAIRN_BINARY_DIR "/bin/cairn" : CAIRN_BINARY_DIR "/bin/cairn-worker");
  for (const std::string& a : {std::string("--config"), cluster.config_path(),
                               std::string("--metrics-port"), std::string("0")}) {
    argv.push_back(a);
  }
  const bool names_coordinator = std::any_of(env.begin(), env.end(), [](const std::string& e) {
    return e.rfind("CAIRN_COORDINATOR=", 0) == 0;
  });
  if (!names_coordinator) {
    argv.push_back("--coordinator");
    argv.push_back(cluster.coordinator_address());
  }
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = Subprocess::Spawn("/usr/bin/env", argv, absl::StrCat(cluster.dir(), "/", name));
  REQUIRE(p.ok());
  return *std::move(p);
}

// Workers 0..shape.workers-1 by --worker-id, once the coordinator has
// passed the start-up barrier with them.
std::vector<std::unique_ptr<Subprocess>> StartWorkersPastBarrier(TestCluster& cluster,
                                                                 const JobShape& shape) {
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int i = 0; i < shape.workers; ++i) {
    workers.push_back(
        StartWorker(cluster, absl::StrCat("worker", i), {}, {"--worker-id", absl::StrCat(i)}));
  }
  REQUIRE(cluster.coordinator().WaitForStderr("start-up barrier passed", absl::Seconds(60)).ok());
  return workers;
}

// Waits for `p` to end within `timeout`; its status (code -1 if it did not).
ExitStatus EndOf(Subprocess& p, absl::Duration timeout) {
  absl::StatusOr<ExitStatus> s = p.Wait(timeout);
  return s.ok() ? *s : ExitStatus{};
}

}  // namespace

TEST_CASE("C06: a finished job ends by itself: final checkpoint, servers exit 0, coordinator "
          "exits 0, within 10 s of the last worker, three runs in a row",
          "[integration][lifecycle][cases]") {
  for (int run = 0; run < 3; ++run) {
    auto dir = testing::MakeTempDir("job_end_ckpt");
    REQUIRE(dir.ok());
    JobShape shape;
    shape.checkpoint_dir = *dir;
    auto cluster = TestCluster::Start("job_end", JobYaml(shape), shape.servers);
    INFO("run " << run << ": " << cluster.status().message());
    REQUIRE(cluster.ok());
    std::vector<std::unique_ptr<Subprocess>> workers;
    for (int i = 0; i < shape.workers; ++i) {
      workers.push_back(
          StartWorker(**cluster, absl::StrCat("worker", i), {}, {"--worker-id", absl::StrCat(i)}));
    }
    INFO((*cluster)->Logs());
    for (auto& w : workers) {
      const ExitStatus s = EndOf(*w, absl::Seconds(120));
      INFO(w->ReadStderr());
      REQUIRE(s.code == 0);
    }
    const absl::Time last_worker = absl::Now();
    for (int i = 0; i < shape.servers; ++i) {
      const ExitStatus s = EndOf((*cluster)->server(i), absl::Seconds(10));
      INFO("server " << i << ": " << s.ToString());
      CHECK(s.code == 0);
    }
    const ExitStatus c = EndOf((*cluster)->coordinator(), absl::Seconds(10));
    const absl::Duration took = absl::Now() - last_worker;
    INFO("coordinator: " << c.ToString() << " " << absl::FormatDuration(took)
                         << " after the last worker");
    CHECK(c.code == 0);
    CHECK(took < absl::Seconds(10));
    const std::string log = (*cluster)->coordinator().ReadStderr();
    CHECK(log.find("the job is over: workers [0, 1] finished") != std::string::npos);
    CHECK(log.find("final checkpoint at clock") != std::string::npos);
    CHECK((*cluster)->server(0).ReadStderr().find("the coordinator announced the job finished") !=
          std::string::npos);
  }
}

TEST_CASE("every worker lost (kill -9): the coordinator exits 8, the servers 10",
          "[integration][lifecycle]") {
  JobShape shape;
  shape.max_steps = 0;  // a whole epoch: longer than the test waits
  auto cluster = TestCluster::Start("job_end_lost", JobYaml(shape), shape.servers);
  REQUIRE(cluster.ok());
  INFO((*cluster)->Logs());
  std::vector<std::unique_ptr<Subprocess>> workers = StartWorkersPastBarrier(**cluster, shape);
  absl::SleepFor(absl::Milliseconds(500));
  for (auto& w : workers) w->Kill();
  const ExitStatus c = EndOf((*cluster)->coordinator(), absl::Seconds(30));
  CHECK(c.code == 8);
  CHECK((*cluster)->coordinator().ReadStderr().find(
            "every worker was lost (declared dead: [0, 1]) and none finished") !=
        std::string::npos);
  for (int i = 0; i < shape.servers; ++i) {
    const ExitStatus s = EndOf((*cluster)->server(i), absl::Seconds(10));
    INFO("server " << i << ": " << s.ToString());
    CHECK(s.code == 10);
  }
}

TEST_CASE("a replica group lost with no checkpoint: the coordinator exits 9 naming it, the "
          "other server 10",
          "[integration][lifecycle]") {
  JobShape shape;
  shape.replication = 1;
  shape.max_steps = 0;
  auto cluster = TestCluster::Start("job_end_data", JobYaml(shape), shape.servers);
  REQUIRE(cluster.ok());
  INFO((*cluster)->Logs());
  std::vector<std::unique_ptr<Subprocess>> workers = StartWorkersPastBarrier(**cluster, shape);
  (*cluster)->server(1).Kill();
  const ExitStatus c = EndOf((*cluster)->coordinator(), absl::Seconds(30));
  CHECK(c.code == 9);
  CHECK((*cluster)->coordinator().ReadStderr().find(
            "lost every copy and no complete checkpoint covers them") != std::string::npos);
  CHECK(EndOf((*cluster)->server(0), absl::Seconds(10)).code == 10);
  for (auto& w : workers) {
    const ExitStatus s = EndOf(*w, absl::Seconds(30));
    INFO(w->ReadStderr());
    CHECK(s.code != 0);
    CHECK(s.code != -1);
  }
}

TEST_CASE("C04: bad identities end the process within seconds with a clear error",
          "[integration][lifecycle][cases]") {
  JobShape shape;
  shape.max_steps = 0;
  auto cluster = TestCluster::Start("job_end_identity", JobYaml(shape), shape.servers);
  REQUIRE(cluster.ok());
  auto first = StartWorker(**cluster, "worker0", {"CAIRN_INDEX=0"}, {});
  REQUIRE((*cluster)->coordinator().WaitForStderr("worker 0 registered", absl::Seconds(30)).ok());
  INFO((*cluster)->Logs() << "\n--- first:\n" << first->ReadStderr());

  SECTION("a second worker claiming a live index exits 11 within 5 s naming the holder") {
    const absl::Time start = absl::Now();
    auto second = StartWorker(**cluster, "worker0b", {"CAIRN_INDEX=0"}, {});
    const ExitStatus s = EndOf(*second, absl::Seconds(30));
    const absl::Duration took = absl::Now() - start;
    INFO(second->ReadStderr() << " after " << absl::FormatDuration(took));
    CHECK(s.code == 11);
    CHECK(took < absl::Seconds(5));
    CHECK(second->ReadStderr().find("worker 0 is already registered and alive") !=
          std::string::npos);
  }
  SECTION("an index out of range exits 2 naming where it came from (run as `cairn`)") {
    auto bad = StartWorker(**cluster, "worker7", {"CAIRN_ROLE=worker", "JOB_COMPLETION_INDEX=7"}, {});
    const ExitStatus s = EndOf(*bad, absl::Seconds(30));
    INFO(bad->ReadStderr());
    CHECK(s.code == 2);
    CHECK(bad->ReadStderr().find(
              "worker index 7 (from JOB_COMPLETION_INDEX) is out of range: cluster.workers is 2") !=
          std::string::npos);
  }
  SECTION("a coordinator name that does not resolve exits 4 naming it") {
    const absl::Time start = absl::Now();
    auto lost = StartWorker(**cluster, "worker_dns",
                            {"CAIRN_INDEX=1", "CAIRN_COORDINATOR=cairn-no-such-host.invalid:7070"},
                            {});
    const ExitStatus s = EndOf(*lost, absl::Seconds(60));
    INFO(lost->ReadStderr());
    CHECK(s.code == 4);
    CHECK(absl::Now() - start < absl::Seconds(20));
    CHECK(lost->ReadStderr().find("\"cairn-no-such-host.invalid\" (from CAIRN_COORDINATOR) "
                                  "does not resolve") != std::string::npos);
  }
  first->Kill();
}

TEST_CASE("a worker that cannot train fails before registering, naming the setting",
          "[integration][lifecycle]") {
  JobShape shape;
  shape.servers = 1;
  shape.workers = 1;
  shape.replication = 1;
  shape.max_steps = 5;
  auto cluster = TestCluster::Start("job_end_cannot_train", JobYaml(shape), shape.servers);
  REQUIRE(cluster.ok());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"training.data_dir=/nonexistent", "cairn-worker: training.data_dir: /nonexistent/"},
      {"training.layers=[780, 32, 10]",
       "cairn-worker: training.layers: [780, 32, 10] must start with the 784 inputs and end "
       "with the 10 classes of the examples in training.data_dir"},
  };
  for (const auto& [set, message] : bad) {
    auto worker = StartWorker(**cluster, "bad", {}, {"--worker-id", "0", "--set", set});
    const ExitStatus s = EndOf(*worker, absl::Seconds(60));
    INFO(set << ":\n" << worker->ReadStderr());
    CHECK(s.code == 2);
    CHECK(worker->ReadStderr().find(message) != std::string::npos);
  }
  INFO((*cluster)->Logs());
  CHECK((*cluster)->coordinator().ReadStderr().find("worker 0 registered") == std::string::npos);
  // Id 0 is free: a good worker takes it and the job ends as finished.
  auto good = StartWorker(**cluster, "good", {}, {"--worker-id", "0"});
  CHECK(EndOf(*good, absl::Seconds(120)).code == 0);
  CHECK(EndOf((*cluster)->coordinator(), absl::Seconds(60)).code == 0);
}

}  // namespace cairn
