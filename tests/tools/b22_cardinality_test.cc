// Field case B22 (../shared/cases/field-failures.md): metric label
// cardinality. Two workers push 100,000 distinct sparse keys through the
// client library; each server's /metrics keeps the same series count after
// the first batch and after all of them, stays under a fixed budget, and no
// label carries a key, a worker id or anything outside the documented label
// names.
#include <catch2/catch.hpp>
#include <future>
#include <random>
#include <set>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/tools/promtool_util.h"
#include "tools/ctl/cluster_status.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

constexpr int kServers = 2;
constexpr int kWorkers = 2;
constexpr int kKeys = 100000;
constexpr int kBatches = 10;  // per worker: kKeys / kWorkers / kBatches keys each
constexpr int kWidth = 4;
constexpr size_t kSeriesBudget = 500;
constexpr size_t kBodyBudgetBytes = 1 << 20;

// The label names docs/metrics.md allows (plus le/quantile of histograms and
// summaries).
const std::set<std::string> kLabelNames = {"method", "code", "table",    "role",     "state",
                                           "phase",  "le",   "quantile", "operation"};

std::string Yaml() {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", kServers, R"(
  workers: )", kWorkers, R"(
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  deadline: 20s
consistency:
  mode: bsp
tables:
  - name: emb
    kind: sparse
    width: )", kWidth, R"(
    optimizer: {type: sgd, learning_rate: 0.1}
    init: {type: constant, value: 0.5}
)");
}

// gRPC status code names, the values of the `code` label.
const std::set<std::string> kCodes = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// Each sample as "name{label=value,...}" without its `code` label: series of
// a new status code (a retried stale-map push, say) appear on first use, and
// are bounded by the 17 codes rather than by keys.
std::set<std::string> SeriesWithoutCode(const std::vector<testing::Sample>& samples) {
  std::set<std::string> series;
  for (const testing::Sample& sample : samples) {
    std::string key = sample.name + "{";
    for (const auto& [label, value] : sample.labels) {
      if (label != "code") key += label + "=" + value + ",";
    }
    series.insert(key + "}");
  }
  return series;
}

// Waits until the server's min clock reaches `clock`: Client::Clock() returns
// before the servers have the tick, and under BSP the iteration's pushes are
// applied only then.
void WaitForMinClock(int port, int64_t clock) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  double min_clock = -1;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> body = testing::HttpGet(port, "/metrics");
    if (body.ok()) {
      absl::StatusOr<double> value = testing::MetricValue(*body, "cairn_shard_min_clock");
      if (value.ok()) min_clock = *value;
      if (min_clock >= static_cast<double>(clock)) return;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  FAIL("server with /metrics on port " << port << " stayed at min clock " << min_clock
                                       << ", below " << clock);
}

// Sample lines of a server's /metrics.
std::vector<testing::Sample> Scrape(int port, size_t* body_bytes) {
  absl::StatusOr<std::string> body = testing::HttpGet(port, "/metrics");
  INFO(body.status().message());
  REQUIRE(body.ok());
  *body_bytes = body->size();
  auto samples = testing::ParseExposition(*body);
  INFO(samples.status().message());
  REQUIRE(samples.ok());
  return *samples;
}

TEST_CASE("B22: 100,000 distinct keys leave each server's series count unchanged and bounded",
          "[tools][metrics][cases][B22]") {
  auto cluster = testing::TestCluster::Start("b22", Yaml(), kServers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  INFO((*cluster)->Logs());

  std::vector<std::future<absl::StatusOr<std::unique_ptr<Client>>>> connecting;
  for (int w = 0; w < kWorkers; ++w) {
    connecting.push_back(std::async(std::launch::async, [&, w] {
      ClientOptions options;
      options.coordinator = (*cluster)->coordinator_address();
      options.worker_id = w;
      options.connect_timeout = absl::Seconds(30);
      options.rpc_deadline = absl::Seconds(20);
      return Client::Connect(options);
    }));
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (auto& c : connecting) {
    auto client = c.get();
    INFO(client.status().message());
    REQUIRE(client.ok());
    clients.push_back(*std::move(client));
  }

  // Distinct keys over the whole 64-bit space, from a fixed seed.
  std::mt19937_64 rng(22);
  std::vector<Key> keys;
  std::unordered_set<Key> seen;
  while (keys.size() < kKeys) {
    const Key k = rng();
    if (seen.insert(k).second) keys.push_back(k);
  }
  const std::vector<float> grads(static_cast<size_t>(kKeys / kWorkers / kBatches) * kWidth, 0.01f);

  std::vector<std::set<std::string>> first_series(kServers);
  const size_t per_batch = kKeys / kWorkers / kBatches;
  for (int b = 0; b < kBatches; ++b) {
    for (int w = 0; w < kWorkers; ++w) {
      const size_t begin = (static_cast<size_t>(w) * kBatches + b) * per_batch;
      absl::Status pushed =
          clients[w]
              ->PushSparse("emb", absl::MakeConstSpan(keys).subspan(begin, per_batch), grads)
              .get();
      INFO(pushed.message());
      REQUIRE(pushed.ok());
    }
    for (auto& c : clients) REQUIRE(c->Clock().ok());
    if (b == 0) {
      for (int s = 0; s < kServers; ++s) {
        WaitForMinClock((*cluster)->server_metrics_port(s), 1);
        size_t bytes = 0;
        first_series[s] = SeriesWithoutCode(Scrape((*cluster)->server_metrics_port(s), &bytes));
      }
    }
  }

  for (int s = 0; s < kServers; ++s) WaitForMinClock((*cluster)->server_metrics_port(s), kBatches);
  std::unordered_set<std::string> key_texts;
  for (Key k : keys) key_texts.insert(absl::StrCat(k));
  for (int s = 0; s < kServers; ++s) {
    INFO("server " << s);
    size_t bytes = 0;
    const absl::Time start = absl::Now();
    const std::vector<testing::Sample> samples = Scrape((*cluster)->server_metrics_port(s), &bytes);
    const absl::Duration took = absl::Now() - start;
    const std::set<std::string> series = SeriesWithoutCode(samples);
    for (const std::string& added : series) {
      INFO("series new since the first batch: " << added);
      CHECK(first_series[s].count(added) == 1);  // independent of the number of keys
    }
    CHECK(series.size() == first_series[s].size());
    CHECK(samples.size() <= kSeriesBudget);
    CHECK(bytes < kBodyBudgetBytes);
    CHECK(took < absl::Seconds(1));
    for (const testing::Sample& sample : samples) {
      for (const auto& [label, value] : sample.labels) {
        INFO(sample.name << "{" << label << "=\"" << value << "\"}");
        CHECK(kLabelNames.count(label) == 1);
        CHECK(key_texts.count(value) == 0);
        if (label == "code") CHECK(kCodes.count(value) == 1);
      }
    }
  }
  // Every key landed (asked after the scrapes: a Stats call adds its
  // method's series): the servers hold 100,000 rows of emb between them,
  // counted once, and each row twice (a primary and a backup: replication
  // defaults to 2).
  absl::StatusOr<ctl::ClusterStatus> status =
      ctl::FetchClusterStatus((*cluster)->coordinator_address(), absl::Seconds(5));
  INFO(status.status().message());
  REQUIRE(status.ok());
  REQUIRE(status->tables.size() == 1);
  CHECK(status->tables[0].table == "emb");
  CHECK(status->tables[0].num_keys == kKeys);
  CHECK(status->tables[0].bytes == kKeys * kWidth * sizeof(float));
  CHECK(status->tables[0].held_keys == 2 * kKeys);

  for (auto& c : clients) CHECK(c->Finish().ok());
}

}  // namespace
}  // namespace cairn
