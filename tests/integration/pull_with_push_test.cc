// A step's pull riding on its push (Client::PushClockAndPull with one
// server, values through a shared region; PushRequest.pull) against a real
// server: one call per step, and the same parameters, bit for bit, as the
// push and the pull sent as two calls, with one worker and with two under
// BSP (where the pull waits on the server for the other worker's tick).
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/same_host.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

constexpr size_t kFloats = 300000;  // 1.2 MB: through the region, in one request
// 3.2 MB: above the region's 2 MiB split, one request only in lent memory.
constexpr size_t kLargeFloats = 800000;
constexpr int kSteps = 6;

// A job of `servers` servers and `workers` workers under consistency
// `mode`, with `tables` (YAML list items); `busy_poll`: the server's
// rpc.busy_poll (0: off).
std::string JobYaml(int workers, bool shared_memory, absl::Duration busy_poll, int servers,
                    const std::string& mode, const std::string& tables) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, R"(
  workers: )", workers, R"(
  partitions: 4
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 60s
rpc:
  deadline: 30s
  shared_memory: )", shared_memory ? "true" : "false", R"(
  busy_poll: )", absl::ToInt64Milliseconds(busy_poll), R"(ms
consistency:
  mode: )", mode, R"(
tables:
)", tables);
}

// The BSP job of the dense cases: one table `w` of `floats` values.
std::string Yaml(int workers, bool shared_memory, size_t floats,
                 absl::Duration busy_poll = absl::ZeroDuration(), int servers = 1) {
  return JobYaml(workers, shared_memory, busy_poll, servers, "bsp", absl::StrCat(R"(  - name: w
    kind: dense
    shape: [)", floats, R"(]
    optimizer: {type: sgd, learning_rate: 0.1, momentum: 0.9}
    init: {type: uniform, scale: 1, seed: 5}
)"));
}

struct WorkerRun {
  absl::Status status;
  std::vector<float> params;  // read ahead after the last step
  ClientStats stats;
};

// A worker that is late: before its push of `step`, worker `id` sleeps;
// or, with `stop_server`, stops the server (SIGSTOP) for `delay` and pushes
// meanwhile.
struct Straggler {
  int id = -1;
  int step = 0;
  absl::Duration delay;
  bool stop_server = false;
};

// One worker's steps: each gradient depends on the parameters the worker
// read (so a wrong read changes every later value), then PushClockAndPull.
// With `lend`, parameters and gradients live in buffers the client lent.
WorkerRun Steps(Client& c, int id, const Straggler& late, size_t floats, bool lend,
                const std::function<void()>& stop_server) {
  WorkerRun run;
  std::vector<float> own_params(floats, 0.0f);
  std::vector<float> own_grads(floats);
  absl::Span<float> params = absl::MakeSpan(own_params);
  absl::Span<float> grads = absl::MakeSpan(own_grads);
  std::unique_ptr<SharedBuffer> lent_params;
  std::unique_ptr<SharedBuffer> lent_grads;
  if (lend) {
    lent_params = c.LendSharedBuffer(floats * sizeof(float));
    lent_grads = c.LendSharedBuffer(floats * sizeof(float));
    if (lent_params == nullptr || lent_grads == nullptr) {
      run.status = absl::InternalError("the client lent no buffer");
      return run;
    }
    params = absl::MakeSpan(reinterpret_cast<float*>(lent_params->bytes().data()), floats);
    grads = absl::MakeSpan(reinterpret_cast<float*>(lent_grads->bytes().data()), floats);
  }
  std::mt19937 rng(100 + id);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  run.status = c.PullAndWait({{"w", params}}, {});
  for (int step = 0; step < kSteps && run.status.ok(); ++step) {
    for (size_t i = 0; i < floats; ++i) grads[i] = 0.1f * params[i] + u(rng);
    if (id == late.id && step == late.step) {
      if (late.stop_server) {
        stop_server();
      } else {
        absl::SleepFor(late.delay);
      }
    }
    absl::Status ahead;
    run.status = c.PushClockAndPull({{"w", grads}}, {}, {{"w", params}}, {}, &ahead);
    if (run.status.ok() && !ahead.ok()) run.status = ahead;
  }
  run.params.assign(params.begin(), params.end());
  run.stats = c.Stats();
  return run;
}

std::vector<WorkerRun> Train(const std::string& name, int workers, bool shared_memory,
                             const Straggler& late = {},
                             absl::Duration rpc_deadline = absl::Seconds(20),
                             size_t floats = kFloats, bool lend = false,
                             absl::Duration busy_poll = absl::ZeroDuration(), int servers = 1) {
  auto cluster = TestCluster::Start(
      name, Yaml(workers, shared_memory, floats, busy_poll, servers), servers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::vector<std::unique_ptr<Client>> clients =
      testing::ConnectAll(**cluster, workers, rpc_deadline, absl::Seconds(30), busy_poll);
  if (shared_memory) {
    for (const auto& c : clients) REQUIRE(testing::WaitForRegions(*c, servers));
  }
  // Stops the server for late.delay, from a thread of its own.
  std::future<absl::Status> resumed;
  auto stop_server = [&cluster, &late, &resumed] {
    REQUIRE((*cluster)->server(0).Signal(SIGSTOP).ok());
    resumed = std::async(std::launch::async, [&cluster, &late] {
      absl::SleepFor(late.delay);
      return (*cluster)->server(0).Signal(SIGCONT);
    });
  };
  std::vector<std::future<WorkerRun>> pending;
  for (int id = 0; id < workers; ++id) {
    pending.push_back(
        std::async(std::launch::async, [&clients, id, &late, floats, lend, &stop_server] {
          return Steps(*clients[id], id, late, floats, lend, stop_server);
        }));
  }
  std::vector<WorkerRun> runs;
  for (auto& p : pending) runs.push_back(p.get());
  if (resumed.valid()) REQUIRE(resumed.get().ok());
  for (size_t id = 0; id < runs.size(); ++id) {
    INFO("worker " << id << ": " << runs[id].status.message());
    REQUIRE(runs[id].status.ok());
  }
  return runs;
}


}  // namespace

TEST_CASE("with one server the pull rides on the push, one call per step, and reads what two "
          "calls read",
          "[integration][shared_memory]") {
  for (int workers : {1, 2}) {
    INFO(workers << " worker(s)");
    const std::vector<WorkerRun> apart =
        Train(absl::StrCat("pull_apart_", workers), workers, /*shared_memory=*/false);
    const std::vector<WorkerRun> riding =
        Train(absl::StrCat("pull_riding_", workers), workers, /*shared_memory=*/true);
    for (int id = 0; id < workers; ++id) {
      INFO("worker " << id);
      CHECK(apart[id].stats.pulls_with_push == 0);
      // Every step's pull rode on its push.
      CHECK(riding[id].stats.pulls_with_push == kSteps);
      CHECK(testing::BitEqual(riding[id].params, apart[id].params));
      // Under BSP every worker reads the same parameters.
      CHECK(testing::BitEqual(riding[id].params, riding[0].params));
    }
    // The steps moved the parameters.
    CHECK_FALSE(testing::BitEqual(apart[0].params, std::vector<float>(kFloats, 0.0f)));
  }
}

TEST_CASE("a model above the region's split in lent memory still takes one call per step, "
          "each read and answered in place, and reads what two calls through gRPC read",
          "[integration][shared_memory]") {
  for (int workers : {1, 2}) {
    INFO(workers << " worker(s)");
    const std::vector<WorkerRun> apart =
        Train(absl::StrCat("lent_apart_", workers), workers, /*shared_memory=*/false, {},
              absl::Seconds(20), kLargeFloats);
    const std::vector<WorkerRun> riding =
        Train(absl::StrCat("lent_riding_", workers), workers, /*shared_memory=*/true, {},
              absl::Seconds(20), kLargeFloats, /*lend=*/true);
    for (int id = 0; id < workers; ++id) {
      INFO("worker " << id);
      CHECK(riding[id].stats.pulls_with_push == kSteps);
      // The first pull, then each step's push and the pull riding on it:
      // one request each, all in place.
      CHECK(riding[id].stats.shared_memory_in_place == 1 + 2 * kSteps);
      CHECK(testing::BitEqual(riding[id].params, apart[id].params));
      CHECK(testing::BitEqual(riding[id].params, riding[0].params));
    }
    CHECK_FALSE(testing::BitEqual(apart[0].params, std::vector<float>(kLargeFloats, 0.0f)));
  }
}

TEST_CASE("waits that poll before they sleep (rpc.busy_poll, server and workers) read what "
          "sleeping waits read, also past the window behind a late worker",
          "[integration][shared_memory]") {
  for (int workers : {1, 2}) {
    INFO(workers << " worker(s)");
    // Worker 0 sleeps 50 ms before its push of step 2: with two workers
    // worker 1's wait for that iteration outlasts its 1 ms of polling.
    const Straggler late{0, 2, absl::Milliseconds(50)};
    const std::vector<WorkerRun> sleeping =
        Train(absl::StrCat("sleeping_", workers), workers, /*shared_memory=*/true, late,
              absl::Seconds(20), kFloats, /*lend=*/true, absl::ZeroDuration());
    const std::vector<WorkerRun> polling =
        Train(absl::StrCat("polling_", workers), workers, /*shared_memory=*/true, late,
              absl::Seconds(20), kFloats, /*lend=*/true, absl::Milliseconds(1));
    for (int id = 0; id < workers; ++id) {
      INFO("worker " << id);
      CHECK(polling[id].stats.pulls_with_push == kSteps);
      CHECK(testing::BitEqual(polling[id].params, sleeping[id].params));
    }
    CHECK_FALSE(testing::BitEqual(polling[0].params, std::vector<float>(kFloats, 0.0f)));
  }
}

TEST_CASE("with both sides polling a step's push goes through the region's call slot, not "
          "gRPC, and reads what two calls through gRPC read, also past a stopped server",
          "[integration][shared_memory]") {
  for (int workers : {1, 2}) {
    INFO(workers << " worker(s)");
    const std::vector<WorkerRun> apart =
        Train(absl::StrCat("slot_apart_", workers), workers, /*shared_memory=*/false);
    const std::vector<WorkerRun> slot =
        Train(absl::StrCat("slot_", workers), workers, /*shared_memory=*/true, {},
              absl::Seconds(20), kFloats, /*lend=*/true, absl::Milliseconds(100));
    // Worker 0 stops the server for 300 ms just before its push of step 2:
    // that push is posted, not taken, withdrawn and sent through gRPC,
    // which the server answers once it runs again; applied once.
    const Straggler stop{.id = 0, .step = 2, .delay = absl::Milliseconds(300),
                         .stop_server = true};
    const std::vector<WorkerRun> stopped =
        Train(absl::StrCat("slot_stopped_", workers), workers, /*shared_memory=*/true, stop,
              absl::Seconds(20), kFloats, /*lend=*/true, absl::Milliseconds(100));
    for (int id = 0; id < workers; ++id) {
      INFO("worker " << id);
      CHECK(apart[id].stats.slot_calls == 0);
      CHECK(slot[id].stats.slot_calls > 0);
      CHECK(slot[id].stats.pulls_with_push == kSteps);
      CHECK(testing::BitEqual(slot[id].params, apart[id].params));
      CHECK(testing::BitEqual(stopped[id].params, apart[id].params));
    }
    CHECK_FALSE(testing::BitEqual(apart[0].params, std::vector<float>(kFloats, 0.0f)));
  }
}

TEST_CASE("with two servers each step's pushes and pulls go through their call slots and read "
          "what gRPC reads",
          "[integration][shared_memory]") {
  const std::vector<WorkerRun> apart =
      Train("slots_apart_2s", 2, /*shared_memory=*/false, {}, absl::Seconds(20), kFloats,
            /*lend=*/false, absl::ZeroDuration(), /*servers=*/2);
  const std::vector<WorkerRun> slots =
      Train("slots_2s", 2, /*shared_memory=*/true, {}, absl::Seconds(20), kFloats,
            /*lend=*/false, absl::Milliseconds(100), /*servers=*/2);
  for (int id = 0; id < 2; ++id) {
    INFO("worker " << id);
    CHECK(slots[id].stats.pulls_with_push == 0);  // several servers: calls of their own
    CHECK(slots[id].stats.slot_calls > 0);
    CHECK(testing::BitEqual(slots[id].params, apart[id].params));
  }
  CHECK_FALSE(testing::BitEqual(apart[0].params, std::vector<float>(kFloats, 0.0f)));
}

TEST_CASE("a pull that would wait past half of its push's deadline is not served with the "
          "push: the push is answered in time and the worker pulls on its own",
          "[integration][shared_memory]") {
  // Worker 1 is 3 s late at step 2; the calls' deadline is 4 s. Worker 0's
  // push of step 2 is answered after 2 s without its pull (not sent again
  // as timed out), and its own pull then waits for worker 1's tick.
  const Straggler late{.id = 1, .step = 2, .delay = absl::Seconds(3)};
  const std::vector<WorkerRun> apart = Train("pull_late_apart", 2, /*shared_memory=*/false);
  const std::vector<WorkerRun> riding =
      Train("pull_late_riding", 2, /*shared_memory=*/true, late, absl::Seconds(4));
  CHECK(riding[0].stats.pulls_with_push == kSteps - 1);
  CHECK(riding[1].stats.pulls_with_push == kSteps);
  for (int id = 0; id < 2; ++id) {
    INFO("worker " << id);
    CHECK(testing::BitEqual(riding[id].params, apart[id].params));
  }
}

TEST_CASE("a sparse push of 4096 rows goes through the call slot, its keys in the slot and its "
          "rows in the region, and lands as through gRPC",
          "[integration][shared_memory]") {
  // 4096 keys are 32 KiB of request: the slot's request room
  // (call_slot::kRequestCapacity) holds them.
  constexpr size_t kRows = 4096;
  constexpr size_t kWidth = 64;
  constexpr int kPushes = 3;
  auto run = [&](const std::string& name, bool shared_memory) {
    const absl::Duration poll = shared_memory ? absl::Milliseconds(100) : absl::ZeroDuration();
    const std::string table = absl::StrCat(R"(  - name: emb
    kind: sparse
    width: )", kWidth, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)");
    auto cluster =
        TestCluster::Start(name, JobYaml(1, shared_memory, poll, /*servers=*/1, "asp", table), 1);
    INFO(cluster.status().message());
    REQUIRE(cluster.ok());
    std::vector<std::unique_ptr<Client>> clients =
        testing::ConnectAll(**cluster, 1, absl::Seconds(20), absl::Seconds(30), poll);
    Client& c = *clients.front();
    if (shared_memory) REQUIRE(testing::WaitForRegions(c, 1));
    std::vector<Key> keys(kRows);
    for (size_t i = 0; i < kRows; ++i) keys[i] = 7 * i + 3;
    std::vector<float> grads(kRows * kWidth);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<float>(i % 13) - 6.0f;
    // The calls that wait polling (PushAndWait, PullAndWait) take the slot.
    for (int p = 0; p < kPushes; ++p) REQUIRE(c.PushAndWait({}, {{"emb", keys, grads}}).ok());
    std::vector<float> rows(kRows * kWidth);
    REQUIRE(c.PullAndWait({}, {{"emb", keys, absl::MakeSpan(rows)}}).ok());
    return std::make_pair(rows, c.Stats());
  };
  const auto [apart, apart_stats] = run("sparse_slot_apart", false);
  const auto [slot, slot_stats] = run("sparse_slot", true);
  CHECK(apart_stats.slot_calls == 0);
  CHECK(slot_stats.slot_calls >= kPushes);
  CHECK(testing::BitEqual(slot, apart));
  // SGD with learning rate 1 from zeros: -3 times each gradient.
  CHECK(apart[kWidth * 5 + 1] == -kPushes * (static_cast<float>((kWidth * 5 + 1) % 13) - 6.0f));
}

}  // namespace cairn
