// Timing loop and report of cairn-bench.
//
// Units (printed with the table):
//   MB/s    value bytes per iteration x iterations / total timed seconds,
//           1 MB = 1e6 bytes. Value bytes are the float32 payload the caller
//           moves (the dense tensor, or rows x width x 4); keys travel too
//           (8 bytes per dense chunk or sparse row) but are not counted.
//   p50/p99 latency of one iteration in ms (nearest rank over all iterations).
//   rows/s  sparse rows per second (sparse cases only).
//   faults  minor page faults per iteration in the calling process (the
//           worker: client library or reference client) / in the serving
//           process (cairn-server or the reference server).
//   worker CPU / server CPU  ms of CPU (user + system, all threads) the
//           calling process (Cairn's client library or the reference client)
//           / the serving process spent per iteration: less noisy than MB/s
//           on a shared machine, and comparable between Cairn and the
//           reference on either side.
//   ratios  a Cairn row's MB/s divided by the unary / stream reference's MB/s
//           for the same operation and bytes. Over several rounds
//           (--rounds), each round's ratio is taken within the round and
//           the table gives their median with the lowest and highest
//           beside it; the other columns pool the rounds' iterations.
#ifndef CAIRN_TOOLS_BENCH_BENCH_REPORT_H_
#define CAIRN_TOOLS_BENCH_BENCH_REPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::bench {

struct TimingOptions {
  int iterations = 0;                       // timed iterations; 0: about `target`
  absl::Duration target = absl::Seconds(3);  // timed length of a case when iterations is 0
  absl::Duration warmup = absl::Milliseconds(500);  // untimed, at least 3 iterations
};

// Counters sampled before and after the timed iterations.
struct Counters {
  int64_t caller_faults = 0;
  int64_t server_faults = 0;
  double server_cpu_seconds = 0;
  double caller_cpu_seconds = 0;
};

struct Timing {
  int64_t iterations = 0;
  Counters counters;  // growth over the timed iterations
  double total_seconds = 0;
  std::vector<double> seconds;  // one per iteration, ascending

  // Nearest-rank quantile q in (0, 1] of the iteration times, in seconds.
  double Quantile(double q) const;
};

// Runs `step` (one iteration) untimed for options.warmup, then timed for
// options.iterations or, when 0, as many iterations as fit in options.target
// at the warm-up's pace (at least 5). The first failing step's Status is
// returned, prefixed with the iteration it failed in. `sample` (may be
// empty) reads the counters; its errors are returned too.
absl::StatusOr<Timing> TimeCase(const std::function<absl::Status()>& step,
                                const TimingOptions& options,
                                const std::function<absl::StatusOr<Counters>()>& sample);

// One line of the table.
struct Row {
  std::string method;     // "Cairn", "unary" or "stream"
  std::string operation;  // "push 1 MiB", "pull 4096 rows x 64", ...
  uint64_t value_bytes = 0;  // per iteration
  int64_t rows = 0;          // sparse rows per iteration; 0 for dense
  Timing timing;
  // Pooled from several rounds (PoolRounds): each round's MB/s, in order;
  // empty for a row of one round.
  std::vector<double> round_megabytes_per_second;

  double MegabytesPerSecond() const;
  // `faults` (a Counters field) divided by the iterations.
  double FaultsPerIteration(int64_t faults) const;
  // The serving process's CPU ms per iteration.
  double ServerCpuMsPerIteration() const;
  // The calling process's CPU ms per iteration.
  double CallerCpuMsPerIteration() const;
  std::string Name() const { return method + " " + operation; }
};

// The rows of several rounds of the same run (each round's rows the same
// methods and operations in the same order) as one row each: iterations,
// seconds, latencies and counters pooled, each round's MB/s kept. One
// round's rows come back as they are. InvalidArgument when the rounds'
// rows differ.
absl::StatusOr<std::vector<Row>> PoolRounds(const std::vector<std::vector<Row>>& rounds);

// A Cairn row's MB/s over a reference row's: within each round when both
// were pooled from the same rounds. Empty when the reference moved nothing.
std::vector<double> RoundRatios(const Row& row, const Row& reference);

// The markdown table: one line per row in the given order, with
// Cairn/unary and Cairn/stream on each Cairn row whose references ran.
std::string MarkdownTable(const std::vector<Row>& rows);

// For each TLS row with its plaintext row in `rows`: MB/s both ways and their
// ratio, as a markdown table; "" when there is none.
std::string TlsCostTable(const std::vector<Row>& rows);

// The rows (with every iteration's latency summarized, not listed) as JSON.
nlohmann::json RowsToJson(const std::vector<Row>& rows);

// Every field of the rows, each iteration's time included: how a measuring
// process hands its rows to the one that prints them.
nlohmann::json RowsToRawJson(const std::vector<Row>& rows);
// Inverse of RowsToRawJson. InvalidArgument naming what is missing or mistyped.
absl::StatusOr<std::vector<Row>> RowsFromRawJson(const nlohmann::json& json);

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_REPORT_H_
