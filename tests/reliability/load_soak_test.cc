// fault scenario T8: sustained load. 2 servers (replication 2), 4 chaos
// workers pushing and pulling as fast as they can under ASP, a checkpoint
// every few seconds. Every few seconds the test scrapes each server's
// /metrics and /proc: resident memory, open descriptors, threads, push
// latency (the server's histogram) and request errors. It prints one line per
// window (acknowledged pushes/s, server-received MB/s, push p50/p99/p999,
// checkpoints) and, per server, the resident-memory slope over the run after
// its first fifth (least squares, MB/min) and descriptors and threads from
// then to the end.
//
// Passes when: no request failed, every chaos worker ended cleanly, the
// oracle finds the final values exact, descriptors and threads did not grow,
// resident memory grew by less than a loose bound (this checks for leaks,
// not speed: a slope is reported, never asserted tightly), and the servers
// and the coordinator then stop cleanly on SIGTERM (exit code 0; under
// AddressSanitizer also no leak and no memory error at exit).
//
// CAIRN_LOAD_SECONDS (default 20) sets the length, CAIRN_LOAD_SAMPLE (2) the
// sampling period and CAIRN_LOAD_WINDOW (10) the reporting window, all in
// seconds; tools/load-soak runs it for 10 minutes.
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;

constexpr int kServers = 2;
constexpr int kWorkers = 4;
// Dense pushes of 40 KB: the oracle's check, linear in pushes times floats,
// stays a few seconds for a 20 s run.
constexpr int kDenseSize = 10000;

Workload LoadWorkload() {
  Workload w = CheckpointWorkload();
  w.dense_size = kDenseSize;
  return w;
}

double EnvSeconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  double d = 0;
  return v != nullptr && absl::SimpleAtod(v, &d) && d > 0 ? d : fallback;
}

std::string JobYaml(const std::string& checkpoint_dir, int checkpoint_every_s) {
  return absl::StrCat(R"(
cluster:
  servers: 2
  workers: 4
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
  state_dir: none
rpc:
  deadline: 20s
consistency:
  mode: asp
tables:
)", WorkloadTablesYaml(kDenseSize, 1000), R"(checkpoint:
  dir: )", checkpoint_dir, R"(
  every: )", checkpoint_every_s, R"(s
  keep: 2
)");
}

// One server's counters and gauges at one moment.
struct Sample {
  double at_s = 0;  // seconds since the workers started
  double rss_bytes = 0;
  double open_fds = 0;
  double threads = 0;
  double push_ok = 0, push_received_bytes = 0, checkpoints_ok = 0;
  // Non-OK answers; UNAVAILABLE apart: a client retries it by design (a
  // request that came before the server installed the ready map, or while
  // a late lease renewal fenced it for a moment).
  double failed_requests = 0, unavailable = 0;
  std::map<double, double> push_buckets;  // le -> cumulative count
  std::map<std::string, double> failures;  // "method code" -> requests
};

// "name{a="x",b="y"} value" -> labels and value; false for other lines.
bool ParseSampleLine(absl::string_view line, absl::string_view name,
                     std::map<std::string, std::string>* labels, double* value) {
  if (!absl::ConsumePrefix(&line, name)) return false;
  labels->clear();
  if (absl::ConsumePrefix(&line, "{")) {
    const size_t close = line.find('}');
    if (close == absl::string_view::npos) return false;
    for (absl::string_view kv : absl::StrSplit(line.substr(0, close), ',', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) return false;
      std::string v(absl::StripPrefix(absl::StripSuffix(kv.substr(eq + 1), "\""), "\""));
      (*labels)[std::string(kv.substr(0, eq))] = v;
    }
    line = line.substr(close + 1);
  } else if (!absl::ConsumePrefix(&line, " ")) {
    return false;  // a longer name
  }
  line = absl::StripAsciiWhitespace(line);
  if (line == "+Inf") {
    *value = INFINITY;
    return true;
  }
  return absl::SimpleAtod(line, value);
}

Sample TakeSample(testing::TestCluster& cluster, int server, double at_s) {
  Sample s;
  s.at_s = at_s;
  absl::StatusOr<std::string> text = testing::HttpGet(cluster.server_metrics_port(server),
                                                      "/metrics");
  REQUIRE(text.ok());
  std::map<std::string, std::string> labels;
  double v = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (ParseSampleLine(line, "process_resident_memory_bytes", &labels, &v)) s.rss_bytes = v;
    if (ParseSampleLine(line, "process_open_fds", &labels, &v)) s.open_fds = v;
    if (ParseSampleLine(line, "cairn_shard_requests_total", &labels, &v)) {
      if (labels["code"] == "UNAVAILABLE") {
        s.unavailable += v;
      } else if (labels["code"] != "OK" && v > 0) {
        s.failed_requests += v;
        s.failures[absl::StrCat(labels["method"], " ", labels["code"])] += v;
      }
      if (labels["method"] == "Push" && labels["code"] == "OK") s.push_ok += v;
    }
    if (ParseSampleLine(line, "cairn_shard_received_bytes_total", &labels, &v) &&
        labels["method"] == "Push") {
      s.push_received_bytes = v;
    }
    if (ParseSampleLine(line, "cairn_shard_checkpoints_total", &labels, &v) &&
        labels["result"] == "ok") {
      s.checkpoints_ok = v;
    }
    if (ParseSampleLine(line, "cairn_shard_request_duration_seconds_bucket", &labels, &v) &&
        labels["method"] == "Push") {
      double le = INFINITY;
      if (labels["le"] != "+Inf") REQUIRE(absl::SimpleAtod(labels["le"], &le));
      s.push_buckets[le] = v;
    }
  }
  s.threads = testing::ProcStatusField(cluster.server(server).pid(), "Threads");
  return s;
}

// The q-quantile's bucket bound of the pushes between two samples (summed
// over servers): the smallest `le` holding at least q of them.
double QuantileBound(const std::map<double, double>& from, const std::map<double, double>& to,
                     double q) {
  const double total = to.empty() ? 0 : to.rbegin()->second - from.rbegin()->second;
  if (total <= 0) return 0;
  for (const auto& [le, count] : to) {
    const auto it = from.find(le);
    const double n = count - (it == from.end() ? 0 : it->second);
    if (n >= q * total) return le;
  }
  return INFINITY;
}

// Least-squares slope of y over x.
double Slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (n < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = n * sxx - sx * sx;
  return d == 0 ? 0 : (n * sxy - sx * sy) / d;
}

std::string Ms(double seconds) {
  return std::isinf(seconds) ? std::string(">10000") : absl::StrFormat("%.2g", seconds * 1e3);
}

TEST_CASE("RELIABILITY T8: sustained ASP load with checkpoints: no errors, exact values, no "
          "growth of memory, descriptors or threads",
          "[reliability][integration][load]") {
  const double seconds = EnvSeconds("CAIRN_LOAD_SECONDS", 20);
  const double sample_every = EnvSeconds("CAIRN_LOAD_SAMPLE", 2);
  const double window = std::max(EnvSeconds("CAIRN_LOAD_WINDOW", 10), sample_every);
  const int checkpoint_every = static_cast<int>(std::clamp(seconds / 10, 5.0, 60.0));
  const Workload w = LoadWorkload();
  absl::StatusOr<std::string> dir = testing::MakeTempDir("load_soak");
  REQUIRE(dir.ok());
  auto cluster = testing::TestCluster::Start(
      "load_soak", JobYaml(*dir + "/ckpt", checkpoint_every), kServers);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  testing::TestCluster& c = **cluster;
  const std::string history_dir = c.dir() + "/history";
  std::filesystem::create_directories(history_dir);

  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    auto worker = SpawnChaosWorker(c, i, /*steps=*/1'000'000'000, history_dir,
                                   {"--seconds", absl::StrCat(seconds)});
    REQUIRE(worker.ok());
    workers.push_back(*std::move(worker));
  }
  std::cout << absl::StrFormat(
                   "load soak: %d servers (replication 2), %d chaos workers under ASP for %.0f s, "
                   "a checkpoint every %d s; samples every %.0f s; dir %s",
                   kServers, kWorkers, seconds, checkpoint_every, sample_every, *dir)
            << std::endl;

  // Samples until the workers are done (they stop by themselves).
  const absl::Time start = absl::Now();
  std::vector<std::vector<Sample>> samples(kServers);
  auto any_running = [&] {
    return std::any_of(workers.begin(), workers.end(), [](auto& w) { return w->Running(); });
  };
  for (int n = 0;; ++n) {
    for (int s = 0; s < kServers; ++s) {
      samples[s].push_back(TakeSample(c, s, absl::ToDoubleSeconds(absl::Now() - start)));
    }
    if (!any_running()) break;
    const absl::Time next = start + absl::Seconds(sample_every * (n + 1));
    while (absl::Now() < next && any_running()) absl::SleepFor(absl::Milliseconds(20));
  }
  for (auto& worker : workers) {
    absl::StatusOr<ExitStatus> ended = worker->Wait(absl::Seconds(60));
    INFO(worker->ReadStderr() << c.Logs());
    REQUIRE(ended.ok());
    CHECK(ended->ToString() == "exit code 0");
  }

  absl::StatusOr<std::vector<HistoryRecord>> history = ReadHistoryDir(history_dir);
  INFO(history.status().message());
  REQUIRE(history.ok());
  const int64_t start_ms = absl::ToUnixMillis(start);

  // One line per window, summed over servers.
  const size_t per_window = static_cast<size_t>(std::lround(window / sample_every));
  for (size_t i = 0; i + per_window < samples[0].size(); i += per_window) {
    const size_t j = i + per_window;
    const double from_s = samples[0][i].at_s, to_s = samples[0][j].at_s;
    std::map<double, double> from_b, to_b;
    double bytes = 0, checkpoints = 0;
    for (int s = 0; s < kServers; ++s) {
      for (const auto& [le, n] : samples[s][i].push_buckets) from_b[le] += n;
      for (const auto& [le, n] : samples[s][j].push_buckets) to_b[le] += n;
      bytes += samples[s][j].push_received_bytes - samples[s][i].push_received_bytes;
      checkpoints += samples[s][j].checkpoints_ok - samples[s][i].checkpoints_ok;
    }
    int64_t acked = 0;
    for (const HistoryRecord& r : *history) {
      const double done_s = static_cast<double>(r.t_complete_ms - start_ms) / 1e3;
      acked += r.outcome == Outcome::kOk && done_s >= from_s && done_s < to_s;
    }
    std::cout << absl::StrFormat(
                     "window %4.0f-%4.0f s: %7.0f pushes/s acknowledged, %6.1f MB/s received by "
                     "servers (backup copies included); server push p50 <= %s ms, p99 <= %s ms, "
                     "p999 <= %s ms; checkpoints written %.0f",
                     from_s, to_s, static_cast<double>(acked) / (to_s - from_s),
                     bytes / (to_s - from_s) / 1e6, Ms(QuantileBound(from_b, to_b, 0.5)),
                     Ms(QuantileBound(from_b, to_b, 0.99)), Ms(QuantileBound(from_b, to_b, 0.999)),
                     checkpoints)
              << std::endl;
  }

  // Per server: after the first fifth (warm-up: allocator arenas, RocksDB
  // memtables, gRPC pools), memory, descriptors and threads must stay flat.
  double failed = 0;
  for (int s = 0; s < kServers; ++s) {
    const std::vector<Sample>& v = samples[s];
    REQUIRE(v.size() >= 3);
    size_t warm = 0;
    while (warm + 2 < v.size() && v[warm].at_s < seconds / 5) ++warm;
    std::vector<double> x, y;
    for (size_t i = warm; i < v.size(); ++i) {
      x.push_back(v[i].at_s / 60);
      y.push_back(v[i].rss_bytes / 1e6);
    }
    const double slope = Slope(x, y);
    const double growth_mb = (v.back().rss_bytes - v[warm].rss_bytes) / 1e6;
    std::cout << absl::StrFormat(
                     "server %d: resident %.0f MB at %.0f s, %.0f MB at the end (slope %+.2f "
                     "MB/min over %zu samples); open descriptors %.0f -> %.0f; threads %.0f -> "
                     "%.0f; failed requests %.0f (and %.0f UNAVAILABLE, retried)",
                     s, v[warm].rss_bytes / 1e6, v[warm].at_s, v.back().rss_bytes / 1e6, slope,
                     x.size(), v[warm].open_fds, v.back().open_fds, v[warm].threads,
                     v.back().threads, v.back().failed_requests, v.back().unavailable)
              << std::endl;
    failed += v.back().failed_requests;
    for (const auto& [what, n] : v.back().failures) {
      std::cout << absl::StrFormat("server %d: %.0f requests failed with %s", s, n, what)
                << std::endl;
    }
    CHECK(v.back().open_fds <= v[warm].open_fds + 8);  // pools may still grow a little
    CHECK(v.back().threads <= v[warm].threads + 8);
    CHECK(v.back().checkpoints_ok >= 1);
    // Loose: a leak of a few pushes' gradients (40 KB each) per second would
    // exceed it over a longer run.
    CHECK(growth_mb < 32 + 0.1 * seconds);
  }
  CHECK(failed == 0);

  absl::StatusOr<JobValues> final_values = ReadFinalValues(c, w);
  INFO(final_values.status().message());
  REQUIRE(final_values.ok());
  const OracleReport report = Check(w, *history, *final_values);
  INFO(report.ToString());
  std::cout << absl::StrFormat("load soak: %d pushes acknowledged, %d failed, %d unknown; lost "
                               "%d, duplicates %d, unexpected %d",
                               report.ok, report.failed, report.info, report.lost,
                               report.duplicates, report.unexpected)
            << std::endl;
  CHECK(report.ok > 0);
  CHECK(report.info == 0);
  CHECK(report.ok_all());

  // A clean stop after the load: the servers, then the coordinator, exit 0
  // on SIGTERM. (Built with -fsanitize=address, a leak or a memory error
  // found at exit makes that exit code non-zero: the ASan run in
  // docs/benchmarks.md.)
  for (int s = 0; s < kServers; ++s) REQUIRE(c.server(s).Signal(SIGTERM).ok());
  for (int s = 0; s < kServers; ++s) {
    absl::StatusOr<ExitStatus> ended = c.server(s).Wait(absl::Seconds(60));
    INFO("server " << s << ": " << c.server(s).ReadStderr());
    REQUIRE(ended.ok());
    CHECK(ended->ToString() == "exit code 0");
  }
  REQUIRE(c.coordinator().Signal(SIGTERM).ok());
  absl::StatusOr<ExitStatus> ended = c.coordinator().Wait(absl::Seconds(60));
  INFO("coordinator: " << c.coordinator().ReadStderr());
  REQUIRE(ended.ok());
  CHECK(ended->ToString() == "exit code 0");
}

}  // namespace
}  // namespace cairn::reliability
