// The correctness anchor: one worker training through Cairn (2 servers, BSP)
// follows `cairn-worker --local` step for step. Same seed, same data order,
// same initial values (placement-independent initializers) and the same
// optimizer code on the servers, so the per-step losses agree within 1e-5
// relative for the first 200 steps (in practice they are identical).
// The same holds for the ctr model: 26 sparse embedding tables and a dense
// head, on data from tools/ctr-generate; and for one server on this host,
// where the worker keeps its values and gradients in memory its client
// lent from the shared region (Client::LendSharedBuffer), also when a
// stopped server times a step's calls out and spoils that memory.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/integration/test_cluster.h"

namespace cairn {
namespace {

using testing::Subprocess;
using testing::TestCluster;

constexpr char kWorker[] = CAIRN_BINARY_DIR "/bin/cairn-worker";

// `servers` servers, 1 worker, BSP, and `training` (the section's body).
std::string Job(const std::string& training, int servers = 2) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, R"(
  workers: 1
  partitions: 16
  heartbeat_interval: 200ms
consistency:
  mode: bsp
training:
)", training);
}

// The MLP job: `hidden` units, `steps` steps of batch 32.
std::string Yaml(int servers = 2, int hidden = 64, int steps = 200) {
  return Job(absl::StrCat("  model: mlp\n  layers: [784, ", hidden, R"(, 10]
  batch_size: 32
  epochs: 1
  max_steps: )", steps, R"(
  seed: 7
  optimizer: {type: sgd, learning_rate: 0.1, momentum: 0.9}
)"),
             servers);
}

// `stderr_text` (may be null) receives what the worker wrote there.
nlohmann::json RunWorker(const std::vector<std::string>& args, const std::string& log,
                         const std::string& summary, std::string* stderr_text = nullptr) {
  auto worker = Subprocess::Spawn(kWorker, args, log);
  REQUIRE(worker.ok());
  auto ended = (*worker)->Wait(absl::Seconds(240));
  INFO((*worker)->ReadStderr());
  REQUIRE(ended.ok());
  REQUIRE(ended->code == 0);
  if (stderr_text != nullptr) *stderr_text = (*worker)->ReadStderr();
  std::ifstream in(summary);
  return nlohmann::json::parse(in);
}

// Largest relative difference of two loss traces of `steps` entries each.
double WorstRelativeDifference(const nlohmann::json& x, const nlohmann::json& y, size_t steps) {
  const std::vector<double> a = x["loss_trace"].get<std::vector<double>>();
  const std::vector<double> b = y["loss_trace"].get<std::vector<double>>();
  REQUIRE(a.size() == steps);
  REQUIRE(b.size() == steps);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-12, std::abs(a[i])));
  }
  return worst;
}

// Runs `cairn-worker --local` and worker 0 through the cluster with the
// cluster's config, `steps` losses traced; their summaries.
std::pair<nlohmann::json, nlohmann::json> RunLocalAndThroughCairn(
    const TestCluster& cluster, int steps, std::string* worker_stderr = nullptr) {
  const std::string dir = cluster.dir();
  const std::string config = cluster.config_path();
  const std::string trace = std::to_string(steps);
  nlohmann::json local = RunWorker(
      {"--config", config, "--local", "--trace-loss", trace, "--summary", dir + "/local.json"},
      dir + "/local", dir + "/local.json");
  nlohmann::json ps =
      RunWorker({"--config", config, "--coordinator", cluster.coordinator_address(),
                 "--worker-id", "0", "--trace-loss", trace, "--summary", dir + "/ps.json"},
                dir + "/ps", dir + "/ps.json", worker_stderr);
  return {std::move(local), std::move(ps)};
}

// Runs both as RunLocalAndThroughCairn does and checks that their per-step
// losses agree within 1e-5; Cairn's summary.
nlohmann::json CheckMatchesLocal(const TestCluster& cluster, int steps) {
  const auto [local, ps] = RunLocalAndThroughCairn(cluster, steps);
  const double worst = WorstRelativeDifference(local, ps, steps);
  INFO("worst relative difference " << worst);
  CHECK(worst <= 1e-5);
  return ps;
}

TEST_CASE("one worker through Cairn matches --local per-step loss for 200 steps",
          "[integration][worker][anchor]") {
  auto cluster = TestCluster::Start("anchor", Yaml(), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const nlohmann::json ps = CheckMatchesLocal(**cluster, 200);
  const std::vector<double> b = ps["loss_trace"].get<std::vector<double>>();
  CHECK(b.back() < b.front());  // and it learns
}

TEST_CASE("servers that serve their calls on four threads each still match --local per-step loss",
          "[integration][worker][anchor]") {
  // Two servers, replication 2: pushes, parked pulls, forwarded copies and
  // the map watch all complete on threads that run concurrently.
  auto cluster = TestCluster::Start("anchor_threads", Yaml() + "rpc:\n  server_threads: 4\n", 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  CheckMatchesLocal(**cluster, 200);
  for (int i = 0; i < 2; ++i) {
    CHECK((*cluster)->server(i).ReadStderr().find("on 4 threads") != std::string::npos);
  }
}

TEST_CASE("one worker of a one-server job, its values in lent shared memory, matches --local "
          "per-step loss for 200 steps",
          "[integration][worker][anchor][shared_memory]") {
  auto cluster = TestCluster::Start("anchor_lent", Yaml(/*servers=*/1), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::string worker_stderr;
  const auto [local, ps] = RunLocalAndThroughCairn(**cluster, 200, &worker_stderr);
  INFO(worker_stderr);
  CHECK(worker_stderr.find("pushes and pulls are read and written there in place") !=
        std::string::npos);
  // Its leave line says the pushes went while written (all but those of
  // the steps before its memory was lent).
  std::smatch streamed;
  const std::regex leave_line("client: same host: .* ([0-9]+) pushes sent while written");
  REQUIRE(std::regex_search(worker_stderr, streamed, leave_line));
  CHECK(std::stoi(streamed[1]) >= 190);
  const double worst = WorstRelativeDifference(local, ps, 200);
  INFO("worst relative difference " << worst);
  CHECK(worst <= 1e-5);
}

TEST_CASE("a step whose lent memory a timed-out call spoiled goes on in the worker's own memory, "
          "and training still matches --local per step",
          "[integration][worker][anchor][shared_memory]") {
  // 1 s calls: a server stopped for 2.5 s times the step's first attempts
  // out, the last one gets through (push_attempts 3). The lease outlasts it.
  std::string yaml = Yaml(/*servers=*/1, /*hidden=*/256, /*steps=*/1800);
  yaml.replace(yaml.find("  heartbeat_interval"), 0, "  lease_timeout: 60s\n");
  yaml += "rpc:\n  deadline: 1s\n";
  auto cluster = TestCluster::Start("anchor_spoiled", yaml, 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  TestCluster& c = **cluster;
  const std::string dir = c.dir();
  const nlohmann::json local =
      RunWorker({"--config", c.config_path(), "--local", "--trace-loss", "1800", "--summary",
                 dir + "/local.json"},
                dir + "/local", dir + "/local.json");
  auto worker = Subprocess::Spawn(
      kWorker,
      {"--config", c.config_path(), "--coordinator", c.coordinator_address(), "--worker-id", "0",
       "--trace-loss", "1800", "--summary", dir + "/ps.json"},
      dir + "/ps");
  REQUIRE(worker.ok());
  REQUIRE((*worker)->WaitForStderr("shared memory each", absl::Seconds(60)).ok());
  absl::SleepFor(absl::Milliseconds(200));
  REQUIRE(c.server(0).Signal(SIGSTOP).ok());
  absl::SleepFor(absl::Milliseconds(2500));
  REQUIRE(c.server(0).Signal(SIGCONT).ok());
  auto ended = (*worker)->Wait(absl::Seconds(240));
  const std::string log = (*worker)->ReadStderr();
  INFO(log);
  REQUIRE(ended.ok());
  REQUIRE(ended->code == 0);
  // Still training when the server stopped, and a call with lent memory
  // failed then.
  CHECK(log.find("lent shared memory failed") != std::string::npos);
  std::ifstream in(dir + "/ps.json");
  const nlohmann::json ps = nlohmann::json::parse(in);
  const double worst = WorstRelativeDifference(local, ps, 1800);
  INFO("worst relative difference " << worst);
  CHECK(worst <= 1e-5);
}

TEST_CASE("ctr model: one worker through Cairn matches --local per-step loss, and test AUC",
          "[integration][worker][anchor][ctr]") {
  auto dir = testing::MakeTempDir("ctr_anchor_data");
  REQUIRE(dir.ok());
  const std::string generate =
      absl::StrCat(CAIRN_SOURCE_DIR "/tools/ctr-generate --out ", *dir,
                   " --examples 12000 --seed 11 --max-cardinality 20000 > ", *dir,
                   "/gen.log 2>&1");
  REQUIRE(std::system(generate.c_str()) == 0);
  // Admission on one field shows unadmitted rows read the initializer on
  // both sides too; adagrad keeps per-row state.
  const std::string yaml = Job(absl::StrCat(R"(  model: ctr
  data_dir: )", *dir, R"(
  embedding: {width: 4, min_count: 2}
  layers: [117, 16, 1]
  batch_size: 64
  epochs: 1
  max_steps: 150
  seed: 3
  optimizer: {type: adagrad, learning_rate: 0.05}
)"));
  auto cluster = TestCluster::Start("ctr_anchor", yaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const auto [local, ps] = RunLocalAndThroughCairn(**cluster, 150);
  const double worst = WorstRelativeDifference(local, ps, 150);
  INFO("worst relative difference " << worst);
  CHECK(worst <= 1e-5);
  // Evaluation pulls the test split's rows through the servers: the same
  // scores as in process.
  REQUIRE(ps.contains("test_auc"));
  CHECK(ps["test_auc"].get<double>() == Approx(local["test_auc"].get<double>()).epsilon(1e-5));
  CHECK(ps["test_loss"].get<double>() == Approx(local["test_loss"].get<double>()).epsilon(1e-5));
  CHECK(ps["test_auc"].get<double>() > 0.6);  // and it learns
}

}  // namespace
}  // namespace cairn
