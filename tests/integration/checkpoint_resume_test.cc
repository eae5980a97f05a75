// Checkpoints of running jobs, end to end with real processes: a BSP job
// killed with -9 after a checkpoint and resumed ends bit-identical to a
// straight run; a checkpoint of 2 servers restores onto 3 and onto 1 with
// values and optimizer state intact (field case B10); a job starts from an
// exported .safetensors file; cairnctl takes a checkpoint on demand.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/coordinator_client.h"
#include "tests/integration/launch_jobs.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::Subprocess;
using testing::TestCluster;

constexpr char kLaunch[] = CAIRN_BINARY_DIR "/bin/cairn-launch";
constexpr char kCtl[] = CAIRN_BINARY_DIR "/bin/cairnctl";

std::string NewDir(const std::string& prefix) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir(prefix);
  REQUIRE(dir.ok());
  return *dir;
}

// The small launcher job (launch_jobs.h: Fashion-MNIST MLP, 2 servers, 2
// workers, BSP, SGD with momentum, whose slots a resume must bring back) for
// 200 steps, with a checkpoint every 100 clocks into `ckpt`.
std::string TrainingJob(const std::string& ckpt) {
  return TinyJob(200) + absl::StrCat("checkpoint:\n  dir: ", ckpt,
                                     "\n  every_clocks: 100\n  keep: 3\n");
}

// Runs `cairnctl args...` to the end; returns its stdout, REQUIREs exit 0.
std::string Ctl(const std::string& dir, const std::vector<std::string>& args) {
  auto ctl = Subprocess::Spawn(kCtl, args, dir + "/ctl");
  REQUIRE(ctl.ok());
  auto ended = (*ctl)->Wait(absl::Seconds(120));
  REQUIRE(ended.ok());
  INFO("cairnctl stderr: " << (*ctl)->ReadStderr());
  REQUIRE(ended->code == 0);
  return (*ctl)->ReadStdout();
}

void SigkillLaunchedJob(Subprocess& launch) {
  // "[launch] started <name> pid=<N>: ..." for every child.
  for (absl::string_view line : absl::StrSplit(launch.ReadStderr(), '\n')) {
    const size_t at = line.find(" pid=");
    if (!absl::StartsWith(line, "[launch] started ") || at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 5);
    int pid = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find(':')), &pid)) ::kill(pid, SIGKILL);
  }
  launch.Kill();
}

TEST_CASE("a BSP job killed with -9 after its step-100 checkpoint and resumed ends bit-identical "
          "to a straight 200-step run",
          "[integration][checkpoint]") {
  const std::string dir = NewDir("resume_bits");
  // Straight run.
  REQUIRE(testing::WriteFile(dir + "/straight.yaml", TrainingJob(dir + "/ckpt-straight")).ok());
  {
    auto launch = Subprocess::Spawn(
        kLaunch, {dir + "/straight.yaml", "--workdir", dir + "/run-straight"}, dir + "/straight");
    REQUIRE(launch.ok());
    auto ended = (*launch)->Wait(absl::Minutes(3));
    REQUIRE(ended.ok());
    INFO((*launch)->ReadStderr());
    REQUIRE(ended->code == 0);
    CHECK(absl::StrContains((*launch)->ReadStderr(), "checkpoint at clock 200 complete"));
  }
  Ctl(dir, {"export", "--from", dir + "/ckpt-straight", dir + "/straight.safetensors"});

  // The same job, slowed down (sleeps only: the arithmetic is the same), every
  // process killed with -9 once the step-100 checkpoint is complete.
  REQUIRE(testing::WriteFile(dir + "/killed.yaml", TrainingJob(dir + "/ckpt-killed")).ok());
  {
    auto launch = Subprocess::Spawn(kLaunch,
                                    {dir + "/killed.yaml", "--workdir", dir + "/run-killed",
                                     "--set", "training.slowdown=20"},
                                    dir + "/killed");
    REQUIRE(launch.ok());
    REQUIRE((*launch)
                ->WaitForStderr("checkpoint at clock 100 complete", absl::Seconds(120))
                .ok());
    SigkillLaunchedJob(**launch);
    INFO((*launch)->ReadStderr());
    REQUIRE_FALSE(absl::StrContains((*launch)->ReadStderr(), "checkpoint at clock 200"));
  }
  {
    auto launch = Subprocess::Spawn(
        kLaunch, {dir + "/killed.yaml", "--workdir", dir + "/run-resumed", "--resume"},
        dir + "/resumed");
    REQUIRE(launch.ok());
    auto ended = (*launch)->Wait(absl::Minutes(3));
    REQUIRE(ended.ok());
    const std::string err = (*launch)->ReadStderr();
    INFO(err);
    REQUIRE(ended->code == 0);
    CHECK(absl::StrContains(err, "resuming from checkpoint record 1 at clock 100"));
    CHECK(absl::StrContains(err, "starts its partitions from checkpoint record 1 (clock 100) in "));
    CHECK(absl::StrContains(err, "resuming at global step 100 (epoch 1/1, step 100) of 200"));
    CHECK(absl::StrContains(err, "checkpoint at clock 200 complete"));
    // Every process runs the coordinator's configuration, --resume included.
    CHECK_FALSE(absl::StrContains(err, "runs config hash"));
    // The report gives this run's counts beside where it resumed.
    CHECK(absl::StrContains((*launch)->ReadStdout(),
                            "epochs 1, steps 100 since the resume at global step 100 (200 in all)"));
  }
  Ctl(dir, {"export", "--from", dir + "/ckpt-killed", dir + "/resumed.safetensors"});
  const std::string a = testing::ReadFileOrEmpty(dir + "/straight.safetensors");
  const std::string b = testing::ReadFileOrEmpty(dir + "/resumed.safetensors");
  REQUIRE(a.size() > 100000);  // 784*32 + 32 + 32*10 + 10 floats and a header
  CHECK(a == b);
}

// --- Field case B10: restore onto another number of servers ---------------

constexpr Key kEndKeys[] = {0, 1, 12345, Key{1} << 63, ~Key{0}};
constexpr int kWidth = 4;
constexpr int kDenseSize = 1000 * 7;

// The cluster and consistency sections of this file's jobs: `servers`
// servers, 1 worker, 8 partitions, BSP, leases short enough for a test.
std::string BspCluster(int servers) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, "\n", R"(  workers: 1
  partitions: 8
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: bsp
)");
}

std::string B10Job(int servers, const std::string& ckpt, const std::string& resume,
                   const std::string& init_from = "") {
  return absl::StrCat(BspCluster(servers), R"(
tables:
  - name: W
    kind: dense
    shape: [1000, 7]
    chunk_size: 64
    optimizer: {type: adam, learning_rate: 0.01}
    init: {type: uniform, scale: 0.5, seed: 3}
  - name: E
    kind: sparse
    width: 4
    optimizer: {type: adam, learning_rate: 0.01}
    init: {type: normal, scale: 0.1, seed: 5}
checkpoint:
)", ckpt.empty() ? "" : absl::StrCat("  dir: ", ckpt, "\n  every_clocks: 3\n"),
                      "  resume: ", resume, "\n",
                      init_from.empty() ? "" : absl::StrCat("  init_from: ", init_from, "\n"));
}

struct Values {
  std::vector<float> dense = std::vector<float>(kDenseSize);
  std::vector<float> sparse = std::vector<float>(std::size(kEndKeys) * kWidth);
  bool operator==(const Values& o) const {
    return std::memcmp(dense.data(), o.dense.data(), dense.size() * 4) == 0 &&
           std::memcmp(sparse.data(), o.sparse.data(), sparse.size() * 4) == 0;
  }
};

std::unique_ptr<Client> ConnectWorker(const TestCluster& cluster) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = 0;
  options.connect_timeout = absl::Seconds(30);
  options.rpc_deadline = absl::Seconds(20);
  auto client = Client::Connect(options);
  INFO(cluster.Logs());
  REQUIRE(client.ok());
  return *std::move(client);
}

Values PullAll(Client& client) {
  Values v;
  REQUIRE(client.PullDense({{"W", absl::MakeSpan(v.dense)}}).get().ok());
  REQUIRE(client.PullSparse("E", kEndKeys, absl::MakeSpan(v.sparse)).get().ok());
  return v;
}

// Step `step`'s gradients: distinct, deterministic, not round.
void PushStep(Client& client, int step) {
  std::vector<float> dense(kDenseSize), sparse(std::size(kEndKeys) * kWidth);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = 0.001f * ((i * 7 + step * 13) % 29) - 0.01f;
  for (size_t i = 0; i < sparse.size(); ++i) sparse[i] = 0.01f * ((i * 5 + step * 3) % 11) - 0.05f;
  REQUIRE(client.PushDense({{"W", absl::MakeConstSpan(dense)}}).get().ok());
  REQUIRE(client.PushSparse("E", kEndKeys, absl::MakeConstSpan(sparse)).get().ok());
  REQUIRE(client.Clock().ok());
}

// Waits until the coordinator recorded a complete checkpoint at `clock`.
void WaitForRecord(const TestCluster& cluster, int64_t clock) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    auto list = coordinator.ListCheckpoints(absl::Seconds(5));
    REQUIRE(list.ok());
    for (const auto& r : list->records()) {
      if (r.clock() == clock) return;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  FAIL("no complete checkpoint at clock " << clock << "\n" << cluster.Logs());
}

TEST_CASE("B10: a checkpoint written by 2 servers restores onto 3 and onto 1 with values, keys "
          "at the ends of the key space and Adam's moments intact",
          "[integration][checkpoint][cases]") {
  const std::string dir = NewDir("b10");
  const std::string ckpt = dir + "/ckpt";
  Values at3, at4;
  {
    auto cluster = TestCluster::Start("b10_two", B10Job(2, ckpt, "none"), 2);
    REQUIRE(cluster.ok());
    auto client = ConnectWorker(**cluster);
    for (int step = 0; step < 3; ++step) PushStep(*client, step);
    at3 = PullAll(*client);  // iteration 3 sees iterations 0..2: the checkpoint's cut
    WaitForRecord(**cluster, 3);
    PushStep(*client, 3);
    at4 = PullAll(*client);
    // Every process dies by SIGKILL with the cluster.
  }
  CHECK_FALSE(at3 == at4);
  for (int servers : {3, 1}) {
    DYNAMIC_SECTION("onto " << servers << " servers") {
      auto cluster = TestCluster::Start(absl::StrCat("b10_onto_", servers),
                                        B10Job(servers, ckpt, "latest"), servers);
      REQUIRE(cluster.ok());
      auto client = ConnectWorker(**cluster);
      CHECK(client->clock() == 3);
      CHECK(PullAll(*client) == at3);
      // The same step applied to the restored state gives the same bits as
      // before the kill: Adam's moments and step counts came back too.
      PushStep(*client, 3);
      CHECK(PullAll(*client) == at4);
    }
  }
  SECTION("a job starts from the exported .safetensors file as initial values") {
    Ctl(dir, {"export", "--from", ckpt, dir + "/b10.safetensors"});
    auto cluster = TestCluster::Start("b10_init", B10Job(1, "", "none", dir + "/b10.safetensors"),
                                      1);
    REQUIRE(cluster.ok());
    auto client = ConnectWorker(**cluster);
    CHECK(client->clock() == 0);
    CHECK(PullAll(*client) == at3);
    CHECK_THAT((*cluster)->server(0).ReadStderr(),
               Catch::Contains("server 0 starts its partitions from " + dir + "/b10.safetensors"));
  }
  SECTION("a file that does not fit the job's tables stops the server at its start, exit 2") {
    Ctl(dir, {"export", "--from", ckpt, dir + "/b10.safetensors"});
    const std::string misfit =
        absl::StrReplaceAll(B10Job(1, "", "none", dir + "/b10.safetensors"),
                            {{"shape: [1000, 7]", "shape: [1000, 8]"}});
    auto cluster = TestCluster::Start("b10_init_misfit", misfit, 1);
    REQUIRE_FALSE(cluster.ok());
    const std::string message(cluster.status().message());
    INFO(message);
    CHECK_THAT(message, Catch::Contains("ended (exit code 2) before writing"));
    CHECK_THAT(message, Catch::Contains("table W: file has [1000,7], the job has [1000,8]"));
  }
}

TEST_CASE("cairnctl checkpoint takes a checkpoint of a running job on demand and lists it",
          "[integration][checkpoint]") {
  const std::string dir = NewDir("ctl_checkpoint");
  std::string yaml = B10Job(2, dir + "/ckpt", "none");
  yaml = absl::StrReplaceAll(yaml, {{"  every_clocks: 3\n", ""}});
  auto cluster = TestCluster::Start("ctl_checkpoint", yaml, 2);
  REQUIRE(cluster.ok());
  auto client = ConnectWorker(**cluster);
  PushStep(*client, 0);
  PushStep(*client, 1);
  // The worker waits in its next pull while the checkpoint runs: a
  // checkpoint in the middle of training, cut at the servers' boundary.
  const std::string out = Ctl(dir, {"--coordinator", (*cluster)->coordinator_address(),
                                    "checkpoint", "--wait", "30s"});
  INFO(out << (*cluster)->Logs());
  CHECK(absl::StrContains(out, "checkpoint complete at clock 2: record 1, 16 table partitions "
                                    "(2 tables x 8 partitions), "));
  CHECK_FALSE(absl::StrContains(out, "taken earlier"));
  // Asked again before another iteration ends: the same clock, whose record
  // answers, and both say so.
  const std::string again_out = Ctl(dir, {"--coordinator", (*cluster)->coordinator_address(),
                                          "checkpoint", "--wait", "30s"});
  CHECK(absl::StrContains(again_out, "checkpoint complete at clock 2: record 1, "));
  CHECK(absl::StrContains(again_out, "(record 1 was taken earlier at this clock: no iteration "
                                     "has ended since, so nothing new was written)"));
  CHECK_THAT((*cluster)->coordinator().ReadStderr(),
             Catch::Contains(" complete: record 1 at clock 2") &&
                 Catch::Contains(": record 1 holds clock 2 already"));
  const Values at2 = PullAll(*client);
  PushStep(*client, 2);
  const std::string list =
      Ctl(dir, {"--coordinator", (*cluster)->coordinator_address(), "checkpoints"});
  // Record 1 at clock 2 holds 16 table partitions (aligned columns).
  bool listed = false;
  for (absl::string_view line : absl::StrSplit(list, '\n')) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    listed |= fields.size() >= 3 && fields[0] == "1" && fields[1] == "2" && fields[2] == "16";
  }
  INFO(list);
  CHECK(listed);
  cluster->reset();
  auto resumed = TestCluster::Start("ctl_checkpoint_resumed",
                                    absl::StrReplaceAll(yaml, {{"resume: none", "resume: 2"}}), 2);
  REQUIRE(resumed.ok());
  auto again = ConnectWorker(**resumed);
  CHECK(again->clock() == 2);
  CHECK(PullAll(*again) == at2);
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

std::string AdmissionJob(int servers, const std::string& ckpt, const std::string& resume) {
  return absl::StrCat(BspCluster(servers), R"(
tables:
  - name: A
    kind: sparse
    width: 2
    min_count: 3
    optimizer: {type: sgd, learning_rate: 1.0}
checkpoint:
  dir: )", ckpt, R"(
  every_clocks: 3
  resume: )", resume, "\n");
}

std::string ColdTierJob(const std::string& ckpt, const std::string& resume) {
  return absl::StrCat(BspCluster(2), R"(
tables:
  - name: C
    kind: sparse
    width: 2
    capacity_rows: 50
    evict_to: 0.5
    cold_tier: true
    optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}
  - name: R
    kind: sparse
    width: 2
    optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}
checkpoint:
  dir: )", ckpt, R"(
  every_clocks: 4
  resume: )", resume, "\n");
}

TEST_CASE("a table with cold_tier: rows beyond its capacity come back with their values through "
          "real servers, and a checkpoint and resume keep both tiers",
          "[integration][checkpoint][cold]") {
  const std::string dir = NewDir("cold_tier");
  const std::string ckpt = dir + "/ckpt";
  // 400 ids, each pushed in 2 of 4 steps, into C (at most 50 rows per
  // server in memory) and R (no bound), which must read the same.
  std::vector<Key> ids;
  for (Key k = 0; k < 400; ++k) ids.push_back(k * 2654435761u);
  auto step_keys = [&](int step) {
    std::vector<Key> keys;
    for (size_t i = 0; i < ids.size(); ++i) {
      if ((i + static_cast<size_t>(step)) % 2 == 0 || i % 7 == 0) keys.push_back(ids[i]);
    }
    return keys;
  };
  auto push_step = [&](Client& client, int step) {
    const std::vector<Key> keys = step_keys(step);
    std::vector<float> grads(keys.size() * 2);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * ((i * 3 + step * 5) % 13) - 0.06f;
    REQUIRE(client.PushSparse("C", keys, grads).get().ok());
    REQUIRE(client.PushSparse("R", keys, grads).get().ok());
    REQUIRE(client.Clock().ok());
  };
  auto same = [&](Client& client) {
    std::vector<float> c(ids.size() * 2), r(ids.size() * 2);
    REQUIRE(client.PullSparse("C", ids, absl::MakeSpan(c)).get().ok());
    REQUIRE(client.PullSparse("R", ids, absl::MakeSpan(r)).get().ok());
    CHECK(c == r);
    CHECK(c != std::vector<float>(c.size(), 0.0f));
  };
  {
    auto cluster = TestCluster::Start("cold_first", ColdTierJob(ckpt, "none"), 2);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    auto client = ConnectWorker(**cluster);
    for (int step = 0; step < 4; ++step) push_step(*client, step);
    WaitForRecord(**cluster, 4);
    same(*client);
    auto stats = testing::StatsOfServers(**cluster);
    REQUIRE(stats.ok());
    uint64_t cold = 0;
    for (const v1::StatsResponse& s : *stats) {
      CHECK(s.tables(0).num_keys() <= 50);
      cold += s.tables(0).cold_rows();
    }
    CHECK(cold >= 600);  // 800 rows with backups, at most 200 in memory
    auto body = testing::HttpGet((*cluster)->server_metrics_port(0), "/metrics");
    REQUIRE(body.ok());
    CHECK(body->find("cairn_shard_cold_rows{table=\"C\"}") != std::string::npos);
  }
  auto cluster = TestCluster::Start("cold_resumed", ColdTierJob(ckpt, "latest"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto client = ConnectWorker(**cluster);
  REQUIRE(client->clock() == 4);
  same(*client);
  for (int step = 4; step < 6; ++step) push_step(*client, step);
  same(*client);
}

TEST_CASE("a checkpoint and resume keep the counts of ids waiting for admission",
          "[integration][checkpoint][admission]") {
  const std::string dir = NewDir("admission");
  const std::string ckpt = dir + "/ckpt";
  const std::vector<Key> ids = {1, ~Key{0} - 3};
  const std::vector<float> grads(4, 0.5f);
  {
    auto cluster = TestCluster::Start("admission_first", AdmissionJob(2, ckpt, "none"), 2);
    REQUIRE(cluster.ok());
    auto client = ConnectWorker(**cluster);
    // Id 0 pushed twice, id 1 once: neither has a row yet.
    REQUIRE(client->PushSparse("A", ids, grads).get().ok());
    REQUIRE(client->Clock().ok());
    REQUIRE(client->PushSparse("A", {ids[0]}, {0.5f, 0.5f}).get().ok());
    REQUIRE(client->Clock().ok());
    REQUIRE(client->Clock().ok());
    WaitForRecord(**cluster, 3);
  }
  for (int servers : {1, 3}) {
    DYNAMIC_SECTION("onto " << servers << " servers") {
      auto cluster = TestCluster::Start(absl::StrCat("admission_onto_", servers),
                                        AdmissionJob(servers, ckpt, "latest"), servers);
      REQUIRE(cluster.ok());
      auto client = ConnectWorker(**cluster);
      REQUIRE(client->clock() == 3);
      // The third push of id 0 admits it (this gradient applied); id 1's
      // second does not.
      REQUIRE(client->PushSparse("A", ids, grads).get().ok());
      REQUIRE(client->Clock().ok());
      std::vector<float> rows(4);
      REQUIRE(client->PullSparse("A", ids, absl::MakeSpan(rows)).get().ok());
      CHECK(rows == std::vector<float>{-0.5f, -0.5f, 0.0f, 0.0f});
      // Every server's Stats: one row, one id waiting (on its primary and,
      // with 3 servers, its backup).
      auto stats = testing::StatsOfServers(**cluster);
      INFO(stats.status().message());
      REQUIRE(stats.ok());
      uint64_t keys = 0, pending = 0;
      for (const v1::StatsResponse& s : *stats) {
        keys += s.tables(0).num_keys();
        pending += s.tables(0).pending_ids();
      }
      const uint64_t copies = servers == 1 ? 1 : 2;
      CHECK(keys == copies);
      CHECK(pending == copies);
    }
  }
}

}  // namespace
}  // namespace cairn
