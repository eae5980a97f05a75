// The client library's example program (examples/client/linear_regression.cc)
// as a user runs it: two of them against a real coordinator and server under
// BSP, training one dense table to the weights the data was made from, and
// the job ending as every member leaves.
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

constexpr char kJob[] = R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: 2
  partitions: 4
  exit_when_done: true
consistency:
  mode: bsp
tables:
  - name: w
    kind: dense
    shape: [2, 3]
    optimizer: {type: sgd, learning_rate: 0.5}
metrics:
  host: 127.0.0.1
  port: 0
)";

}  // namespace

TEST_CASE("the client example trains its table to the target and leaves the job",
          "[integration][client]") {
  auto cluster = TestCluster::Start("client_example", kJob, 1);
  REQUIRE(cluster.ok());
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int id = 0; id < 2; ++id) {
    auto p = Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-client-example",
                               {"--coordinator", (*cluster)->coordinator_address(),
                                "--worker-id", absl::StrCat(id), "--steps", "200"},
                               absl::StrCat((*cluster)->dir(), "/example", id));
    REQUIRE(p.ok());
    workers.push_back(*std::move(p));
  }
  for (auto& w : workers) {
    auto ended = w->Wait(absl::Seconds(120));
    INFO((*cluster)->Logs() << w->ReadStderr());
    REQUIRE(ended.ok());
    CHECK(ended->ToString() == "exit code 0");
    const std::string out = w->ReadStdout();
    INFO(out);
    std::smatch m;
    REQUIRE(std::regex_search(out, m, std::regex(
        R"(after 200 steps: max \|w - target\| = ([0-9.e+-]+) over 6 weights)")));
    double distance = 1;
    REQUIRE(absl::SimpleAtod(m[1].str(), &distance));
    // From 0 (the table's zeros) to targets 0.5 .. 3: trained, not merely run.
    CHECK(distance < 1e-3);
    CHECK(out.find("step 0 loss") != std::string::npos);
  }
  // Both left: the job ends, the coordinator last.
  auto coordinator = (*cluster)->coordinator().Wait(absl::Seconds(60));
  REQUIRE(coordinator.ok());
  CHECK(coordinator->ToString() == "exit code 0");
}

}  // namespace cairn
