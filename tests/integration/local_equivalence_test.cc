// The correctness anchor: one worker training through Cairn (2 servers, BSP)
// follows `cairn-worker --local` step for step. Same seed, same data order,
// same initial values (placement-independent initializers) and the same
// optimizer code on the servers, so the per-step losses agree within 1e-5
// relative for the first 200 steps (in practice they are identical).
#include <catch2/catch.hpp>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/integration/test_cluster.h"

namespace cairn {
namespace {

using testing::Subprocess;
using testing::TestCluster;

constexpr char kWorker[] = CAIRN_BINARY_DIR "/bin/cairn-worker";

std::string Yaml() {
  return R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 16
  heartbeat_interval: 200ms
consistency:
  mode: bsp
training:
  model: mlp
  layers: [784, 64, 10]
  batch_size: 32
  epochs: 1
  max_steps: 200
  seed: 7
  optimizer: {type: sgd, learning_rate: 0.1, momentum: 0.9}
)";
}

nlohmann::json RunWorker(const std::vector<std::string>& args, const std::string& log,
                         const std::string& summary) {
  auto worker = Subprocess::Spawn(kWorker, args, log);
  REQUIRE(worker.ok());
  auto ended = (*worker)->Wait(absl::Seconds(240));
  INFO((*worker)->ReadStderr());
  REQUIRE(ended.ok());
  REQUIRE(ended->code == 0);
  std::ifstream in(summary);
  return nlohmann::json::parse(in);
}

TEST_CASE("one worker through Cairn matches --local per-step loss for 200 steps",
          "[integration][worker][anchor]") {
  auto cluster = TestCluster::Start("anchor", Yaml(), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  const std::string dir = (*cluster)->dir();
  const std::string config = (*cluster)->config_path();
  const nlohmann::json local =
      RunWorker({"--config", config, "--local", "--trace-loss", "200", "--summary",
                 dir + "/local.json"},
                dir + "/local", dir + "/local.json");
  const nlohmann::json ps = RunWorker(
      {"--config", config, "--coordinator", (*cluster)->coordinator_address(), "--worker-id",
       "0", "--trace-loss", "200", "--summary", dir + "/ps.json"},
      dir + "/ps", dir + "/ps.json");
  const std::vector<double> a = local["loss_trace"].get<std::vector<double>>();
  const std::vector<double> b = ps["loss_trace"].get<std::vector<double>>();
  REQUIRE(a.size() == 200);
  REQUIRE(b.size() == 200);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-12, std::abs(a[i])));
  }
  INFO("worst relative difference " << worst);
  CHECK(worst <= 1e-5);
  CHECK(b.back() < b.front());  // and it learns
}

}  // namespace
}  // namespace cairn
