// cairn-bench's report over several rounds (tools/bench/bench_report.h):
// rows pooled, ratios taken within each round.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tools/bench/bench_report.h"

namespace cairn::bench {
namespace {

// A row that moved `mb` MB (1e6 bytes per iteration) in one second, with
// one iteration's latency per MB and `cpu` seconds of server CPU.
Row Measured(const std::string& method, int mb, double cpu = 0) {
  Row row;
  row.method = method;
  row.operation = "push 1 MB";
  row.value_bytes = 1000000;
  row.timing.iterations = mb;
  row.timing.total_seconds = 1.0;
  row.timing.seconds.assign(mb, 1.0 / mb);
  row.timing.counters.server_cpu_seconds = cpu;
  return row;
}

TEST_CASE("rounds pool into one row each, with each round's ratio taken within the round") {
  // Cairn moves 100, 300, 200 MB/s against unary's 200, 200, 400: ratios
  // 0.5, 1.5, 0.5 (median 0.5), though the pooled MB/s are equal.
  const std::vector<std::vector<Row>> rounds = {
      {Measured("Cairn-gRPC", 100, 0.1), Measured("unary", 200)},
      {Measured("Cairn-gRPC", 300, 0.3), Measured("unary", 200)},
      {Measured("Cairn-gRPC", 200, 0.2), Measured("unary", 400)},
  };
  absl::StatusOr<std::vector<Row>> pooled = PoolRounds(rounds);
  REQUIRE(pooled.ok());
  REQUIRE(pooled->size() == 2);
  const Row& cairn = (*pooled)[0];
  CHECK(cairn.timing.iterations == 600);
  CHECK(cairn.timing.total_seconds == Approx(3.0));
  CHECK(cairn.timing.seconds.size() == 600);
  CHECK(std::is_sorted(cairn.timing.seconds.begin(), cairn.timing.seconds.end()));
  CHECK(cairn.MegabytesPerSecond() == Approx(200));
  CHECK(cairn.ServerCpuMsPerIteration() == Approx(1.0));
  CHECK(cairn.round_megabytes_per_second == std::vector<double>{100, 300, 200});

  const std::vector<double> ratios = RoundRatios(cairn, (*pooled)[1]);
  REQUIRE(ratios.size() == 3);
  CHECK(ratios[0] == Approx(0.5));
  CHECK(ratios[1] == Approx(1.5));
  CHECK(ratios[2] == Approx(0.5));
  CHECK_THAT(MarkdownTable(*pooled), Catch::Contains("| 0.50 (0.50-1.50) |"));
  const nlohmann::json json = RowsToJson(*pooled);
  CHECK(json[0]["round_ratios_to_unary"].size() == 3);
  CHECK(json[0]["ratio_to_unary"].get<double>() == Approx(0.5));  // the table's median
}

TEST_CASE("one round's rows come back as they were, with one ratio") {
  const std::vector<std::vector<Row>> rounds = {
      {Measured("Cairn-gRPC", 300), Measured("unary", 200)}};
  absl::StatusOr<std::vector<Row>> pooled = PoolRounds(rounds);
  REQUIRE(pooled.ok());
  CHECK((*pooled)[0].round_megabytes_per_second.empty());
  CHECK(RoundRatios((*pooled)[0], (*pooled)[1]) == std::vector<double>{1.5});
  CHECK_THAT(MarkdownTable(*pooled), Catch::Contains("| 1.50 |"));
}

TEST_CASE("rounds whose rows differ are refused, naming the row") {
  std::vector<std::vector<Row>> rounds = {
      {Measured("Cairn-gRPC", 100), Measured("unary", 200)},
      {Measured("Cairn-gRPC", 100), Measured("stream", 200)},
  };
  absl::StatusOr<std::vector<Row>> pooled = PoolRounds(rounds);
  CHECK(pooled.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(pooled.status().message()),
             Catch::Contains("round 2 row 2 is stream push 1 MB, round 1's is unary push 1 MB"));
  rounds[1].pop_back();
  CHECK(PoolRounds(rounds).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cairn::bench
