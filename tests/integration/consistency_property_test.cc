// The consistency guarantee as a property, against a real cluster (one
// coordinator, two servers) and the real client with its cache:
//
// A table of W * T floats starts at 0; element (w, t) is touched only by
// worker w's push at iteration t (gradient -1, SGD lr 1, aggregation sum),
// so it reads 1 once that update is in and 0 before: every read shows
// exactly which (worker, iteration) updates it contains. Workers run T
// iterations with random delays (a random straggler per run, random pauses),
// reading the table once or twice per iteration and sometimes again right
// after their push; the other iterations end with the push itself
// (Client::PushAndClock, the tick carried by the push), half of them also
// reading the next iteration with it (Client::PushClockAndPull, the pull
// sent ahead of the tick). At every read by worker w at iteration t:
//   - every update of iterations < t - s is in (s: 0 for BSP, the bound for
//     SSP; nothing for ASP), and so is every earlier update of w itself;
//   - a read after w's own push of iteration t contains it (SSP, ASP) - the
//     cache must not hide it (read-my-writes, field case B15);
//   - under BSP the read equals the serial result: exactly the updates of
//     iterations < t;
//   - every element is 0 or 1 (no update applied twice).
// Dense tables (chunks of 2 floats over both servers) and sparse tables (key
// w * T + t) both run; sparse ones exercise cache hits on rows other
// workers wrote, since a worker's push invalidates only its own row.
#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/types.pb.h"
#include "tests/integration/client_threads.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::Failures;
using testing::TestCluster;

constexpr int kIterations = 8;  // T, per run

struct Run {
  std::string table;
  bool sparse = false;
  v1::Consistency mode = v1::CONSISTENCY_BSP;
  int64_t staleness = 0;  // SSP
  int straggler = 0;      // the worker slowed 3x in this run
};

std::string TableYaml(const Run& run, int workers) {
  const char* mode = run.mode == v1::CONSISTENCY_BSP   ? "bsp"
                     : run.mode == v1::CONSISTENCY_SSP ? "ssp"
                                                       : "asp";
  std::string t = absl::StrCat("  - name: ", run.table, "\n");
  if (run.sparse) {
    absl::StrAppend(&t, "    kind: sparse\n    width: 1\n");
  } else {
    absl::StrAppend(&t, "    kind: dense\n    shape: [", workers * kIterations,
                    "]\n    chunk_size: 2\n");
  }
  absl::StrAppend(&t, "    optimizer: {type: sgd, learning_rate: 1.0}\n",
                  "    init: {type: zeros}\n    aggregation: sum\n    consistency: ", mode, "\n");
  if (run.mode == v1::CONSISTENCY_SSP) absl::StrAppend(&t, "    staleness: ", run.staleness, "\n");
  return t;
}

// Checks one read (`values`, W * T floats) by `worker` at iteration `t`.
// `after_push`: the worker already pushed its update of iteration t.
void CheckRead(const Run& run, int workers, int worker, int t, bool after_push,
               const std::vector<float>& values, Failures* failures) {
  auto fail = [&](int w, int u, const std::string& why) {
    failures->Add(absl::StrCat(run.table, ": worker ", worker, " at iteration ", t,
                               after_push ? " (after its push)" : "", ": update (", w, ", ", u,
                               ") ", why, "; value ", values[w * kIterations + u]));
  };
  const bool bounded = run.mode != v1::CONSISTENCY_ASP;
  const int64_t s = run.mode == v1::CONSISTENCY_SSP ? run.staleness : 0;
  for (int w = 0; w < workers; ++w) {
    for (int u = 0; u < kIterations; ++u) {
      const float v = values[w * kIterations + u];
      if (v != 0.0f && v != 1.0f) fail(w, u, "is neither absent nor applied once");
      const bool own = w == worker && (u < t || (u == t && after_push));
      const bool required = (bounded && u < t - s) || (own && run.mode != v1::CONSISTENCY_BSP) ||
                            (w == worker && u < t);
      if (required && v != 1.0f) fail(w, u, "is required by the bound but missing");
      if (run.mode == v1::CONSISTENCY_BSP && u >= t && v != 0.0f) {
        fail(w, u, "is visible under BSP before its iteration closed");
      }
    }
  }
}

absl::Status Read(Client& client, const Run& run, int workers, std::vector<float>* values) {
  if (run.sparse) {
    std::vector<Key> keys(workers * kIterations);
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = k;
    return client.PullSparse(run.table, keys, absl::MakeSpan(*values)).get();
  }
  return client.PullDense({{run.table, absl::MakeSpan(*values)}}).get();
}

// How a worker's push of an iteration goes out.
enum class End {
  kPush,              // a push alone; the iteration goes on
  kPushAndClock,      // the push ends the iteration (its ticks ride on it)
  kPushClockAndPull,  // ... and reads the next iteration into `next`
};

// Worker w's push of iteration t. With kPushClockAndPull, `next` receives
// the next iteration's read and `pulled` its result.
absl::Status Write(Client& client, const Run& run, int workers, int worker, int t, End end,
                   std::vector<float>* next = nullptr, absl::Status* pulled = nullptr) {
  const Key key = static_cast<Key>(worker * kIterations + t);
  std::vector<Key> all(workers * kIterations);
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  if (run.sparse) {
    const std::vector<Key> keys = {key};
    const std::vector<float> grad = {-1.0f};
    std::vector<ConstSparseRows> rows = {ConstSparseRows{run.table, keys, grad}};
    if (end == End::kPushAndClock) return client.PushAndClock({}, std::move(rows));
    if (end == End::kPushClockAndPull) {
      return client.PushClockAndPull({}, std::move(rows), {},
                                     {SparseRows{run.table, all, absl::MakeSpan(*next)}}, pulled);
    }
    return client.PushSparse(run.table, keys, grad).get();
  }
  std::vector<float> grad(workers * kIterations, 0.0f);
  grad[key] = -1.0f;
  if (end == End::kPushAndClock) return client.PushAndClock({{run.table, grad}}, {});
  if (end == End::kPushClockAndPull) {
    return client.PushClockAndPull({{run.table, grad}}, {}, {{run.table, absl::MakeSpan(*next)}},
                                   {}, pulled);
  }
  return client.PushDense({{run.table, grad}}).get();
}

// One worker's thread: every run, T iterations each.
void Work(Client& client, const std::vector<Run>& runs, int workers, int worker, uint64_t seed,
          Failures* failures) {
  std::mt19937_64 rng(seed * 1000 + worker);
  std::uniform_int_distribution<int> pause_us(0, 3000);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<float> values(workers * kIterations);
  for (const Run& run : runs) {
    for (int t = 0; t < kIterations; ++t) {
      int us = pause_us(rng);
      if (worker == run.straggler) us *= 3;
      if (coin(rng) < 0.1) us += 15000;  // a hiccup
      std::this_thread::sleep_for(std::chrono::microseconds(us));
      const std::string where = absl::StrCat(run.table, " worker ", worker, " iteration ", t);
      const int reads = coin(rng) < 0.3 ? 2 : 1;  // a second read may come from the cache
      for (int r = 0; r < reads; ++r) {
        absl::Status s = Read(client, run, workers, &values);
        failures->Check(s, "pull " + where);
        if (s.ok()) CheckRead(run, workers, worker, t, false, values, failures);
      }
      // Read again after the push, then end the iteration; or end it with
      // the push (PushAndClock), maybe reading the next iteration with it
      // (PushClockAndPull).
      const double end = coin(rng);
      if (end < 0.3) {
        failures->Check(Write(client, run, workers, worker, t, End::kPush), "push " + where);
        absl::Status s = Read(client, run, workers, &values);
        failures->Check(s, "pull after push " + where);
        if (s.ok()) CheckRead(run, workers, worker, t, true, values, failures);
        failures->Check(client.Clock(), "clock " + where);
      } else if (end < 0.65) {
        failures->Check(Write(client, run, workers, worker, t, End::kPushAndClock),
                        "push and clock " + where);
      } else {
        absl::Status pulled;
        failures->Check(
            Write(client, run, workers, worker, t, End::kPushClockAndPull, &values, &pulled),
            "push, clock and pull " + where);
        failures->Check(pulled, "pull ahead " + where);
        if (pulled.ok()) CheckRead(run, workers, worker, t + 1, false, values, failures);
      }
    }
  }
}

}  // namespace

TEST_CASE("no read misses an update its staleness bound requires, BSP reads are serial",
          "[integration][consistency][property]") {
  const int workers = GENERATE(2, 3, 4, 5);
  const uint64_t seed = 17 + static_cast<uint64_t>(workers);
  std::mt19937_64 rng(seed);
  std::vector<Run> runs;
  const std::vector<std::pair<v1::Consistency, int64_t>> modes = {
      {v1::CONSISTENCY_BSP, 0}, {v1::CONSISTENCY_SSP, 1}, {v1::CONSISTENCY_SSP, 3},
      {v1::CONSISTENCY_ASP, 0}};
  for (int round = 0; round < 4; ++round) {
    for (const auto& [mode, s] : modes) {
      for (bool sparse : {false, true}) {
        Run run;
        run.table = absl::StrCat("t", runs.size());
        run.sparse = sparse;
        run.mode = mode;
        run.staleness = s;
        run.straggler = static_cast<int>(rng() % workers);
        runs.push_back(run);
      }
    }
  }
  std::shuffle(runs.begin(), runs.end(), rng);
  std::string yaml = absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: )", workers, R"(
  partitions: 8
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  deadline: 20s
tables:
)");
  for (const Run& run : runs) yaml += TableYaml(run, workers);
  auto cluster = TestCluster::Start(absl::StrCat("property_", workers), yaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto clients = testing::ConnectWorkers(**cluster, workers);
  INFO(clients.status().message());
  REQUIRE(clients.ok());

  Failures failures;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back(
        [&, w] { Work(*(*clients)[w], runs, workers, w, seed, &failures); });
  }
  for (std::thread& t : threads) t.join();
  INFO(failures.Describe() << (*cluster)->Logs());
  CHECK(failures.count() == 0);

  // Every update is in exactly once at the end. Under SSP a read at clock t
  // may still come from the cache up to s clocks old, so every worker first
  // moves past the largest bound (3): then every table's bound requires
  // every update of every run, as the check below does.
  for (auto& c : *clients) {
    for (int i = 0; i < 4; ++i) REQUIRE(c->Clock().ok());
  }
  std::vector<float> values(workers * kIterations);
  for (const Run& run : runs) {
    REQUIRE(Read(*(*clients)[0], run, workers, &values).ok());
    INFO(run.table);
    CHECK(values == std::vector<float>(values.size(), 1.0f));
  }
  uint64_t hits = 0, reads = 0;
  int64_t max_staleness = 0;
  for (auto& c : *clients) {
    const ClientStats stats = c->Stats();
    hits += stats.cache_hits;
    reads += stats.reads;
    max_staleness = std::max(max_staleness, stats.max_read_staleness);
    CHECK(c->Finish().ok());
  }
  CHECK(hits > 0);  // the cache served some reads, and none broke the property
  CHECK(reads > 0);
  WARN("workers " << workers << ": " << runs.size() << " runs, " << reads << " reads, " << hits
                  << " keys from the cache, max read staleness " << max_staleness << " clocks");
}

}  // namespace cairn
