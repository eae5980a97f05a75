// Bad checkpoints at resume, with real processes: a missing directory, a
// flipped byte, tables that differ from the job, a directory another live
// job holds. Each fails the start with exit code 2 and a message naming what
// is wrong, and leaves every file of the checkpoint directory as it was.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;
using testing::TestCluster;

constexpr char kCoordinator[] = CAIRN_BINARY_DIR "/bin/cairn-coordinator";

std::string Job(const std::string& ckpt, const std::string& resume,
                const std::string& w_shape = "[300, 5]") {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 4
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: bsp
tables:
  - name: W
    kind: dense
    shape: )", w_shape, R"(
    chunk_size: 16
    optimizer: {type: adam, learning_rate: 0.01}
    init: {type: uniform, scale: 0.5, seed: 3}
  - name: E
    kind: sparse
    width: 4
    optimizer: {type: sgd, learning_rate: 0.1}
    init: {type: zeros}
checkpoint:
  dir: )", ckpt, R"(
  every_clocks: 2
  resume: )", resume, "\n");
}

// Every regular file under `dir`, relative path -> contents.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files[fs::relative(e.path(), dir).string()] = testing::ReadFileOrEmpty(e.path().string());
    }
  }
  return files;
}

// A checkpoint at clock 2 by 2 servers under `ckpt`, then every process killed.
void WriteCheckpoint(const std::string& ckpt) {
  auto cluster = TestCluster::Start("bad_input_source", Job(ckpt, "none"), 2);
  REQUIRE(cluster.ok());
  ClientOptions options;
  options.coordinator = (*cluster)->coordinator_address();
  options.worker_id = 0;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  std::vector<float> w(300 * 5, 0.25f);
  for (int step = 0; step < 3; ++step) {
    REQUIRE((*client)->PushDense({{"W", absl::MakeConstSpan(w)}}).get().ok());
    REQUIRE((*client)->Clock().ok());
  }
  // The pull of iteration 3 returns once iteration 2 closed, past the cut at
  // 2; wait until the coordinator logged the record.
  REQUIRE((*client)->PullDense({{"W", absl::MakeSpan(w)}}).get().ok());
  REQUIRE((*cluster)->coordinator().WaitForStderr("checkpoint at clock 2 complete",
                                                  absl::Seconds(30)).ok());
}

// Runs a coordinator on `yaml` to its end; returns its exit code and stderr.
std::pair<int, std::string> RunCoordinator(const std::string& dir, const std::string& yaml) {
  REQUIRE(testing::WriteFile(dir + "/job.yaml", yaml).ok());
  auto c = Subprocess::Spawn(kCoordinator,
                             {"--config", dir + "/job.yaml", "--listen", "127.0.0.1:0"},
                             dir + "/coordinator");
  REQUIRE(c.ok());
  auto ended = (*c)->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  return {ended->code, (*c)->ReadStderr()};
}

TEST_CASE("resume refuses bad checkpoints with a clear error and changes nothing",
          "[integration][checkpoint]") {
  auto dir = testing::MakeTempDir("checkpoint_bad_input");
  REQUIRE(dir.ok());
  const std::string ckpt = *dir + "/ckpt";

  SECTION("a missing checkpoint directory") {
    auto [code, err] = RunCoordinator(*dir, Job(*dir + "/nowhere", "latest"));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains(*dir + "/nowhere does not exist"));
    CHECK_FALSE(fs::exists(*dir + "/nowhere"));
  }

  WriteCheckpoint(ckpt);
  const std::map<std::string, std::string> before = Snapshot(ckpt);
  REQUIRE(before.size() > 4);

  SECTION("tables that differ from the job in shape") {
    auto [code, err] = RunCoordinator(*dir, Job(ckpt, "latest", "[300, 6]"));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains("table W"));
    CHECK_THAT(err, Catch::Contains("[300,5]"));
    CHECK_THAT(err, Catch::Contains("[300,6]"));
    CHECK(Snapshot(ckpt) == before);
  }
  SECTION("tables that differ from the job in name") {
    auto [code, err] = RunCoordinator(
        *dir, absl::StrReplaceAll(Job(ckpt, "latest"), {{"name: E", "name: F"}}));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains("E"));
    CHECK_THAT(err, Catch::Contains("F"));
    CHECK(Snapshot(ckpt) == before);
  }
  SECTION("a clock no complete checkpoint has") {
    auto [code, err] = RunCoordinator(*dir, Job(ckpt, "7"));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains("no complete checkpoint at clock 7"));
    CHECK_THAT(err, Catch::Contains("clocks 2"));
    CHECK(Snapshot(ckpt) == before);
  }
  SECTION("a flipped byte in a server's store") {
    // The biggest table file of server 0's store holds the partitions.
    std::string victim;
    uintmax_t size = 0;
    for (const auto& e : fs::directory_iterator(ckpt + "/server-0")) {
      if (e.path().extension() == ".sst" && e.file_size() > size) {
        victim = e.path().string();
        size = e.file_size();
      }
    }
    REQUIRE(!victim.empty());
    std::string bytes = testing::ReadFileOrEmpty(victim);
    bytes[bytes.size() / 3] ^= 0x10;
    REQUIRE(testing::WriteFile(victim, bytes).ok());
    const std::map<std::string, std::string> damaged = Snapshot(ckpt);
    auto [code, err] = RunCoordinator(*dir, Job(ckpt, "latest"));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains(ckpt + "/server-0"));
    CHECK_THAT(err, Catch::Contains("orrupt") || Catch::Contains("checksum"));
    CHECK(Snapshot(ckpt) == damaged);
  }
  SECTION("a checkpoint directory another live job holds") {
    auto live = TestCluster::Start("bad_input_live", Job(ckpt, "latest"), 2);
    REQUIRE(live.ok());
    auto [code, err] = RunCoordinator(*dir, Job(ckpt, "latest"));
    INFO(err);
    CHECK(code == 2);
    CHECK_THAT(err, Catch::Contains(ckpt + "/coordinator"));
    CHECK_THAT(err, Catch::Contains("held by another live"));
    live->reset();
    CHECK(Snapshot(ckpt).size() >= before.size());
    for (const auto& [name, contents] : before) {
      if (name.find(".sst") != std::string::npos) CHECK(Snapshot(ckpt).at(name) == contents);
    }
  }
}

}  // namespace
}  // namespace cairn
