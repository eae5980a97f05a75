#include "tools/bench/bench_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "tools/bench/bench_cases.h"

namespace cairn::bench {
namespace {

constexpr int kMinWarmupIterations = 3;
constexpr int64_t kMinIterations = 5;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const Row* FindReference(const std::vector<Row>& rows, const Row& row, const char* method) {
  for (const Row& r : rows) {
    if (r.method == method && r.operation == row.operation) return &r;
  }
  return nullptr;
}

// The median of `v` (not empty).
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "0.92", or over rounds "0.92 (0.75-1.23)": median (lowest-highest).
std::string Ratio(const Row& row, const Row* reference) {
  if (reference == nullptr) return "";
  const std::vector<double> ratios = RoundRatios(row, *reference);
  if (ratios.empty()) return "";
  if (ratios.size() == 1) return absl::StrFormat("%.2f", ratios[0]);
  const auto [lowest, highest] = std::minmax_element(ratios.begin(), ratios.end());
  return absl::StrFormat("%.2f (%.2f-%.2f)", Median(ratios), *lowest, *highest);
}

}  // namespace

absl::StatusOr<std::vector<Row>> PoolRounds(const std::vector<std::vector<Row>>& rounds) {
  if (rounds.empty()) return std::vector<Row>();
  if (rounds.size() == 1) return rounds[0];
  std::vector<Row> pooled = rounds[0];
  for (Row& row : pooled) row.round_megabytes_per_second = {row.MegabytesPerSecond()};
  for (size_t r = 1; r < rounds.size(); ++r) {
    if (rounds[r].size() != pooled.size()) {
      return absl::InvalidArgumentError(absl::StrCat("round ", r + 1, " has ", rounds[r].size(),
                                                     " rows, round 1 has ", pooled.size()));
    }
    for (size_t i = 0; i < pooled.size(); ++i) {
      const Row& row = rounds[r][i];
      Row& into = pooled[i];
      if (row.Name() != into.Name()) {
        return absl::InvalidArgumentError(absl::StrCat("round ", r + 1, " row ", i + 1, " is ",
                                                       row.Name(), ", round 1's is ", into.Name()));
      }
      into.round_megabytes_per_second.push_back(row.MegabytesPerSecond());
      Timing& t = into.timing;
      t.iterations += row.timing.iterations;
      t.total_seconds += row.timing.total_seconds;
      t.seconds.insert(t.seconds.end(), row.timing.seconds.begin(), row.timing.seconds.end());
      t.counters.caller_faults += row.timing.counters.caller_faults;
      t.counters.server_faults += row.timing.counters.server_faults;
      t.counters.server_cpu_seconds += row.timing.counters.server_cpu_seconds;
      t.counters.caller_cpu_seconds += row.timing.counters.caller_cpu_seconds;
    }
  }
  for (Row& row : pooled) std::sort(row.timing.seconds.begin(), row.timing.seconds.end());
  return pooled;
}

std::vector<double> RoundRatios(const Row& row, const Row& reference) {
  const std::vector<double>& mine = row.round_megabytes_per_second;
  const std::vector<double>& theirs = reference.round_megabytes_per_second;
  if (mine.size() > 1 && mine.size() == theirs.size()) {
    std::vector<double> ratios;
    for (size_t r = 0; r < mine.size(); ++r) {
      if (theirs[r] <= 0) return {};
      ratios.push_back(mine[r] / theirs[r]);
    }
    return ratios;
  }
  if (reference.MegabytesPerSecond() <= 0) return {};
  return {row.MegabytesPerSecond() / reference.MegabytesPerSecond()};
}

double Timing::Quantile(double q) const {
  if (seconds.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(seconds.size())));
  return seconds[std::clamp<size_t>(rank, 1, seconds.size()) - 1];
}

absl::StatusOr<Timing> TimeCase(const std::function<absl::Status()>& step,
                                const TimingOptions& options,
                                const std::function<absl::StatusOr<Counters>()>& sample) {
  const double warmup_s = absl::ToDoubleSeconds(options.warmup);
  const auto warmup_start = std::chrono::steady_clock::now();
  int warmup_iterations = 0;
  while (warmup_iterations < kMinWarmupIterations || SecondsSince(warmup_start) < warmup_s) {
    RETURN_IF_ERROR(Annotate(step(), absl::StrCat("warm-up iteration ", warmup_iterations)));
    ++warmup_iterations;
  }
  const double pace_s = SecondsSince(warmup_start) / warmup_iterations;
  Timing timing;
  timing.iterations = options.iterations > 0
                          ? options.iterations
                          : std::max<int64_t>(kMinIterations,
                                              static_cast<int64_t>(std::ceil(
                                                  absl::ToDoubleSeconds(options.target) /
                                                  std::max(pace_s, 1e-9))));
  timing.seconds.reserve(timing.iterations);
  Counters before;
  if (sample) {
    ASSIGN_OR_RETURN(before, sample());
  }
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < timing.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(Annotate(step(), absl::StrCat("iteration ", i)));
    timing.seconds.push_back(SecondsSince(t0));
  }
  timing.total_seconds = SecondsSince(start);
  if (sample) {
    ASSIGN_OR_RETURN(Counters after, sample());
    timing.counters.caller_faults = after.caller_faults - before.caller_faults;
    timing.counters.server_faults = after.server_faults - before.server_faults;
    timing.counters.server_cpu_seconds = after.server_cpu_seconds - before.server_cpu_seconds;
    timing.counters.caller_cpu_seconds = after.caller_cpu_seconds - before.caller_cpu_seconds;
  }
  std::sort(timing.seconds.begin(), timing.seconds.end());
  return timing;
}

double Row::MegabytesPerSecond() const {
  if (timing.total_seconds <= 0) return 0;
  return static_cast<double>(value_bytes) * static_cast<double>(timing.iterations) /
         timing.total_seconds / 1e6;
}

double Row::ServerCpuMsPerIteration() const {
  if (timing.iterations <= 0) return 0;
  return timing.counters.server_cpu_seconds * 1e3 / static_cast<double>(timing.iterations);
}

double Row::CallerCpuMsPerIteration() const {
  if (timing.iterations <= 0) return 0;
  return timing.counters.caller_cpu_seconds * 1e3 / static_cast<double>(timing.iterations);
}

double Row::FaultsPerIteration(int64_t faults) const {
  if (timing.iterations <= 0) return 0;
  return static_cast<double>(faults) / static_cast<double>(timing.iterations);
}

std::string MarkdownTable(const std::vector<Row>& rows) {
  std::string out =
      "| case | iterations | MB/s | rows/s | p50 ms | p99 ms | Cairn/unary | Cairn/stream "
      "| Cairn/memcpy | faults/iter | worker CPU ms/iter | server CPU ms/iter |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& row : rows) {
    const bool cairn = IsCairnMethod(row.method);
    const std::string rows_per_s =
        row.rows > 0 ? absl::StrFormat("%.0f", static_cast<double>(row.rows) *
                                                   static_cast<double>(row.timing.iterations) /
                                                   row.timing.total_seconds)
                     : "";
    absl::StrAppendFormat(&out,
                          "| %s | %d | %.0f | %s | %.3f | %.3f | %s | %s | %s | %.0f / %.0f "
                          "| %.3f | %.3f |\n",
                          row.Name(), row.timing.iterations, row.MegabytesPerSecond(),
                          rows_per_s, row.timing.Quantile(0.5) * 1e3,
                          row.timing.Quantile(0.99) * 1e3,
                          cairn ? Ratio(row, FindReference(rows, row, "unary")) : "",
                          cairn ? Ratio(row, FindReference(rows, row, "stream")) : "",
                          cairn ? Ratio(row, FindReference(rows, row, "memcpy")) : "",
                          row.FaultsPerIteration(row.timing.counters.caller_faults),
                          row.FaultsPerIteration(row.timing.counters.server_faults),
                          row.CallerCpuMsPerIteration(), row.ServerCpuMsPerIteration());
  }
  return out;
}

nlohmann::json RowsToJson(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json j;
    j["case"] = row.Name();
    j["method"] = row.method;
    j["operation"] = row.operation;
    j["value_bytes"] = row.value_bytes;
    j["rows"] = row.rows;
    j["iterations"] = row.timing.iterations;
    j["total_seconds"] = row.timing.total_seconds;
    j["megabytes_per_second"] = row.MegabytesPerSecond();
    j["p50_ms"] = row.timing.Quantile(0.5) * 1e3;
    j["p99_ms"] = row.timing.Quantile(0.99) * 1e3;
    j["min_ms"] = row.timing.Quantile(0) * 1e3;
    j["max_ms"] = row.timing.Quantile(1) * 1e3;
    j["caller_minor_faults_per_iteration"] =
        row.FaultsPerIteration(row.timing.counters.caller_faults);
    j["server_minor_faults_per_iteration"] =
        row.FaultsPerIteration(row.timing.counters.server_faults);
    j["worker_cpu_ms_per_iteration"] = row.CallerCpuMsPerIteration();
    j["server_cpu_ms_per_iteration"] = row.ServerCpuMsPerIteration();
    if (!row.round_megabytes_per_second.empty()) {
      j["round_megabytes_per_second"] = row.round_megabytes_per_second;
    }
    if (IsCairnMethod(row.method)) {
      for (const char* ref : {"unary", "stream", "memcpy"}) {
        const Row* r = FindReference(rows, row, ref);
        const std::vector<double> ratios =
            r != nullptr ? RoundRatios(row, *r) : std::vector<double>();
        if (ratios.empty()) continue;
        // The table's figure: over rounds, the median of the round ratios.
        j[absl::StrCat("ratio_to_", ref)] = Median(ratios);
        if (ratios.size() > 1) j[absl::StrCat("round_ratios_to_", ref)] = ratios;
      }
    }
    if (IsTlsMethod(row.method)) {
      const Row* plain = FindReference(rows, row, PlaintextOf(row.method).c_str());
      const std::vector<double> ratios =
          plain != nullptr ? RoundRatios(row, *plain) : std::vector<double>();
      if (!ratios.empty()) j["ratio_to_plaintext"] = Median(ratios);
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::string TlsCostTable(const std::vector<Row>& rows) {
  std::string out;
  for (const Row& row : rows) {
    if (!IsTlsMethod(row.method)) continue;
    const Row* plain = FindReference(rows, row, PlaintextOf(row.method).c_str());
    if (plain == nullptr) continue;
    if (out.empty()) {
      out = "\n| case | MB/s with TLS | MB/s without | TLS / plaintext | p50 ms with / without |\n"
            "|---|---:|---:|---:|---:|\n";
    }
    absl::StrAppendFormat(&out, "| %s | %.0f | %.0f | %s | %.3f / %.3f |\n", row.Name(),
                          row.MegabytesPerSecond(), plain->MegabytesPerSecond(),
                          Ratio(row, plain), row.timing.Quantile(0.5) * 1e3,
                          plain->timing.Quantile(0.5) * 1e3);
  }
  return out;
}

nlohmann::json RowsToRawJson(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& row : rows) {
    out.push_back({{"method", row.method},
                   {"operation", row.operation},
                   {"value_bytes", row.value_bytes},
                   {"rows", row.rows},
                   {"iterations", row.timing.iterations},
                   {"total_seconds", row.timing.total_seconds},
                   {"seconds", row.timing.seconds},
                   {"caller_faults", row.timing.counters.caller_faults},
                   {"server_faults", row.timing.counters.server_faults},
                   {"server_cpu_seconds", row.timing.counters.server_cpu_seconds},
                   {"caller_cpu_seconds", row.timing.counters.caller_cpu_seconds}});
  }
  return out;
}

absl::StatusOr<std::vector<Row>> RowsFromRawJson(const nlohmann::json& json) {
  std::vector<Row> rows;
  try {
    for (const nlohmann::json& j : json) {
      Row row;
      row.method = j.at("method").get<std::string>();
      row.operation = j.at("operation").get<std::string>();
      row.value_bytes = j.at("value_bytes").get<uint64_t>();
      row.rows = j.at("rows").get<int64_t>();
      row.timing.iterations = j.at("iterations").get<int64_t>();
      row.timing.total_seconds = j.at("total_seconds").get<double>();
      row.timing.seconds = j.at("seconds").get<std::vector<double>>();
      row.timing.counters.caller_faults = j.at("caller_faults").get<int64_t>();
      row.timing.counters.server_faults = j.at("server_faults").get<int64_t>();
      row.timing.counters.server_cpu_seconds = j.at("server_cpu_seconds").get<double>();
      row.timing.counters.caller_cpu_seconds = j.at("caller_cpu_seconds").get<double>();
      rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bench rows JSON: ", e.what()));
  }
  return rows;
}

}  // namespace cairn::bench
