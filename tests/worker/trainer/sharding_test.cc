// Per-epoch shuffling and round-robin sharding across workers.
#include "worker/trainer/sharding.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <vector>

namespace cairn {
namespace {

TEST_CASE("steps per epoch is floor(n / (workers * batch))", "[worker][sharding]") {
  CHECK(StepsPerEpoch(60000, 1, 64) == 937);
  CHECK(StepsPerEpoch(60000, 2, 64) == 468);
  CHECK(StepsPerEpoch(60000, 3, 100) == 200);
  CHECK(StepsPerEpoch(10, 4, 3) == 0);
  CHECK(StepsPerEpoch(10, 0, 3) == 0);
}

TEST_CASE("an epoch's permutation is a permutation, fixed by (seed, epoch)", "[worker][sharding]") {
  std::vector<int32_t> p, again, next_epoch, other_seed;
  EpochPermutation(1000, 7, 3, &p);
  EpochPermutation(1000, 7, 3, &again);
  EpochPermutation(1000, 7, 4, &next_epoch);
  EpochPermutation(1000, 8, 3, &other_seed);
  CHECK(p == again);
  CHECK(p != next_epoch);
  CHECK(p != other_seed);
  std::vector<int32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int32_t i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
}

TEST_CASE("workers' shards are disjoint and cover steps * workers * batch examples",
          "[worker][sharding]") {
  const int workers = GENERATE(1, 2, 3, 7);
  const int batch = GENERATE(1, 64, 100);
  const int64_t n = 60000;
  const int64_t steps = StepsPerEpoch(n, workers, batch);
  std::set<int32_t> seen;
  for (int w = 0; w < workers; ++w) {
    absl::StatusOr<DataShard> shard = DataShard::Create(n, w, workers, batch, 42);
    REQUIRE(shard.ok());
    REQUIRE(shard->steps_per_epoch() == steps);
    shard->StartEpoch(5);
    for (int64_t s = 0; s < steps; ++s) {
      for (int32_t index : shard->Batch(s)) REQUIRE(seen.insert(index).second);
    }
  }
  CHECK(static_cast<int64_t>(seen.size()) == steps * workers * batch);
}

TEST_CASE("step s of W workers with batch b uses the examples of step s with batch W*b",
          "[worker][sharding]") {
  const int workers = GENERATE(2, 3);
  const int batch = 16;
  absl::StatusOr<DataShard> local = DataShard::Create(60000, 0, 1, workers * batch, 9);
  REQUIRE(local.ok());
  local->StartEpoch(1);
  std::vector<DataShard> shards;
  for (int w = 0; w < workers; ++w) {
    absl::StatusOr<DataShard> shard = DataShard::Create(60000, w, workers, batch, 9);
    REQUIRE(shard.ok());
    shard->StartEpoch(1);
    shards.push_back(*std::move(shard));
  }
  CHECK(local->steps_per_epoch() == shards[0].steps_per_epoch());
  for (int64_t s : {0, 1, 17, int(shards[0].steps_per_epoch()) - 1}) {
    absl::Span<const int32_t> big = local->Batch(s);
    std::multiset<int32_t> want(big.begin(), big.end()), got;
    for (DataShard& shard : shards) {
      absl::Span<const int32_t> part = shard.Batch(s);
      got.insert(part.begin(), part.end());
    }
    REQUIRE(got == want);
  }
}

TEST_CASE("one worker walks the permutation in order", "[worker][sharding]") {
  std::vector<int32_t> p;
  EpochPermutation(1000, 3, 0, &p);
  absl::StatusOr<DataShard> shard = DataShard::Create(1000, 0, 1, 10, 3);
  REQUIRE(shard.ok());
  shard->StartEpoch(0);
  absl::Span<const int32_t> step2 = shard->Batch(2);
  CHECK(std::vector<int32_t>(step2.begin(), step2.end()) ==
        std::vector<int32_t>(p.begin() + 20, p.begin() + 30));
}

TEST_CASE("shards reject bad workers and data too small for one step", "[worker][sharding]") {
  CHECK(DataShard::Create(100, 2, 2, 10, 1).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(DataShard::Create(100, 0, 1, 0, 1).status().code() == absl::StatusCode::kInvalidArgument);
  absl::Status small = DataShard::Create(100, 0, 4, 32, 1).status();
  CHECK(small.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(small.message()), Catch::Contains("100 examples are too few"));
}

}  // namespace
}  // namespace cairn
