// The shard's domain logic without gRPC: BSP aggregation, clocks and
// barriers, deadlines, exactly-once pushes, and validation leaving values
// unchanged.
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <limits>

#include "common/bytes.h"
#include "common/status_conversion.h"

namespace cairn {
namespace {

TEST_CASE("BSP applies the mean of all workers' pushes once per iteration", "[shard][bsp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1, 2})).ok());
  REQUIRE(shard.Push(PushScalar(0, 1, 0, 1.0f)).ok());
  REQUIRE(shard.Push(PushScalar(1, 1, 0, 2.0f)).ok());
  REQUIRE(shard.Push(PushScalar(2, 1, 0, 6.0f)).ok());

  PullResult pull;
  StartPull(shard, &pull, 0, 1);
  CHECK_FALSE(pull.done);  // nobody has finished iteration 0
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());
  CHECK_FALSE(pull.done);  // worker 2 is still in iteration 0
  REQUIRE(shard.Clock(Tick(2, 1)).ok());
  REQUIRE(pull.done);
  REQUIRE(pull.status.ok());
  // w = 0 - 1.0 * mean(1, 2, 6) = -3.
  CHECK(pull.value() == -3.0f);
}

TEST_CASE("BSP with aggregation sum applies the sum", "[shard][bsp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP, v1::AGGREGATION_SUM)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  REQUIRE(shard.Push(PushScalar(0, 1, 0, 1.0f)).ok());
  REQUIRE(shard.Push(PushScalar(1, 1, 0, 2.0f)).ok());
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());
  PullResult pull;
  StartPull(shard, &pull, 0, 1);
  REQUIRE(pull.done);
  CHECK(pull.value() == -3.0f);
}

TEST_CASE("a worker that leaves cleanly shrinks the barrier (B03)", "[shard][bsp][cases]") {
  // 3 workers, constant gradient 1.0, lr 1, aggregation sum: workers 0 and 1
  // run 10 iterations, worker 2 runs 7 and leaves. Every pushed gradient
  // counts once: w = -(3*7 + 2*3) = -27.
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP, v1::AGGREGATION_SUM)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1, 2})).ok());
  uint64_t seq[3] = {0, 0, 0};
  for (int64_t t = 0; t < 10; ++t) {
    for (uint32_t w = 0; w < 3; ++w) {
      if (w == 2 && t >= 7) continue;
      REQUIRE(shard.Push(PushScalar(w, ++seq[w], t, 1.0f)).ok());
      REQUIRE(shard.Clock(Tick(w, t + 1)).ok());
    }
    if (t == 6) REQUIRE(shard.Clock(Tick(2, 7, /*leaving=*/true)).ok());
  }
  PullResult pull;
  StartPull(shard, &pull, 0, 10);
  REQUIRE(pull.done);
  CHECK(pull.value() == -27.0f);
}

TEST_CASE("ASP applies pushes on arrival and pulls never wait", "[shard][asp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  REQUIRE(shard.Push(PushScalar(0, 1, 0, 1.0f)).ok());
  PullResult pull;
  StartPull(shard, &pull, 1, 50);
  REQUIRE(pull.done);
  CHECK(pull.value() == -1.0f);
}

TEST_CASE("a BSP pull sent ahead of its tick does not tick and is answered once the push closes "
          "the iteration",
          "[shard][bsp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  // Worker 0's pull of iteration 1 arrives before its push of iteration 0.
  PullResult ahead;
  StartPull(shard, &ahead, 0, 1, absl::InfiniteFuture(), /*after_tick=*/true);
  CHECK_FALSE(ahead.done);
  // A plain pull would have ticked the worker and closed iteration 0
  // without the push; this one did not, so the push is still accepted.
  REQUIRE(shard.Push(PushScalar(0, 1, 0, 2.0f)).ok());
  CHECK_FALSE(ahead.done);
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(ahead.done);
  REQUIRE(ahead.status.ok());
  CHECK(ahead.value() == -2.0f);
  CHECK(ahead.response.min_clock() == 1);
}

TEST_CASE("a pull sent ahead of its tick waits for that tick even under ASP and SSP "
          "(read-my-writes)",
          "[shard][asp][ssp]") {
  const v1::Consistency mode = GENERATE(v1::CONSISTENCY_ASP, v1::CONSISTENCY_SSP);
  v1::TableSpec table = ScalarTable("w", mode);
  if (mode == v1::CONSISTENCY_SSP) table.set_staleness(3);
  Shard shard(0, Job({table}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  PullResult ahead;
  StartPull(shard, &ahead, 0, 1, absl::InfiniteFuture(), /*after_tick=*/true);
  CHECK_FALSE(ahead.done);  // the bound allows it; its own push is not in yet
  REQUIRE(shard.Push(PushScalar(0, 1, 0, 1.0f)).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());  // another worker's tick releases nothing
  CHECK_FALSE(ahead.done);
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(ahead.done);
  REQUIRE(ahead.status.ok());
  CHECK(ahead.value() == -1.0f);
}

TEST_CASE("a pull ahead whose tick never comes expires naming the worker it waited for",
          "[shard][asp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  PullResult ahead;
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  StartPull(shard, &ahead, 0, 1, deadline, /*after_tick=*/true);
  shard.ExpireWaiters(deadline + absl::Milliseconds(1));
  REQUIRE(ahead.done);
  CHECK(ahead.status.code() == absl::StatusCode::kDeadlineExceeded);
  const std::string msg(ahead.status.message());
  CHECK_THAT(msg, Catch::Contains("table=w"));
  CHECK_THAT(msg, Catch::Contains("sent ahead of its tick"));
  CHECK_THAT(msg, Catch::Contains("worker's clock >= 1; it is at clock 0"));
}

TEST_CASE("a pull ahead from a worker this server does not list is refused as unavailable",
          "[shard]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  PullResult ahead;
  StartPull(shard, &ahead, 5, 1, absl::InfiniteFuture(), /*after_tick=*/true);
  REQUIRE(ahead.done);
  CHECK(ahead.status.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(ahead.status.message()),
             Catch::Contains("does not list that worker as live"));
  PullResult plain;  // sent again after the tick, a plain pull is served
  StartPull(shard, &plain, 5, 1);
  REQUIRE(plain.done);
  CHECK(plain.status.ok());
}

TEST_CASE("a retried push with the same sequence is applied once", "[shard]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  absl::StatusOr<bool> first = shard.Push(PushScalar(0, 1, 0, 1.0f));
  absl::StatusOr<bool> again = shard.Push(PushScalar(0, 1, 0, 1.0f));
  REQUIRE(first.ok());
  REQUIRE(again.ok());
  CHECK_FALSE(*first);
  CHECK(*again);  // reported as a duplicate
  PullResult pull;
  StartPull(shard, &pull, 0, 0);
  CHECK(pull.value() == -1.0f);
}

TEST_CASE("a pull that waits past its deadline names the table, clock and slowest worker",
          "[shard][bsp]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  PullResult pull;
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  StartPull(shard, &pull, 0, 1, deadline);
  shard.ExpireWaiters(deadline - absl::Milliseconds(1));
  CHECK_FALSE(pull.done);
  shard.ExpireWaiters(deadline + absl::Milliseconds(1));
  REQUIRE(pull.done);
  CHECK(pull.status.code() == absl::StatusCode::kDeadlineExceeded);
  const std::string msg(pull.status.message());
  CHECK_THAT(msg, Catch::Contains("table=w"));
  CHECK_THAT(msg, Catch::Contains("min clock >= 1"));
  CHECK_THAT(msg, Catch::Contains("slowest worker 1 is at clock 0"));
}

TEST_CASE("a rejected push changes nothing, not even its valid tables", "[shard][bad_input]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP), ScalarTable("v", v1::CONSISTENCY_ASP)}),
              nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  v1::PushRequest r = PushScalar(0, 1, 0, 5.0f);
  v1::TableValues* bad = r.add_tables();
  bad->set_table_id(1);
  bad->set_table("v");
  bad->set_keys(KeysToBytes({0}));
  bad->set_values(FloatsToBytes({std::numeric_limits<float>::quiet_NaN()}));
  bad->add_shape(1);
  bad->set_dtype(v1::DTYPE_FLOAT32);
  absl::StatusOr<bool> result = shard.Push(r);
  CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
  PullResult pull;
  StartPull(shard, &pull, 0, 0);
  CHECK(pull.value() == 0.0f);
  // The same sequence may be retried once fixed: a rejection is not "applied".
  CHECK(shard.Push(PushScalar(0, 1, 0, 5.0f)).ok());
}

TEST_CASE("a server that holds no partition still takes part in clocks (B04)", "[shard][cases]") {
  // All 4 partitions belong to server 1; server 0 holds nothing.
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1}, 1, /*server=*/1)).ok());
  v1::StatsResponse stats;
  shard.Stats(&stats);
  CHECK(stats.partitions_size() == 0);
  CHECK(stats.tables(0).num_keys() == 0);
  for (int64_t t = 1; t <= 5; ++t) {
    REQUIRE(shard.Clock(Tick(0, t)).ok());
    absl::StatusOr<int64_t> min_clock = shard.Clock(Tick(1, t));
    REQUIRE(min_clock.ok());
    CHECK(*min_clock == t);
  }
  // A key routed here under a map that gives it to another server is refused.
  absl::StatusOr<bool> pushed = shard.Push(PushScalar(0, 1, 5, 1.0f));
  CHECK(pushed.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("requests with an older map version get FAILED_PRECONDITION with the current version",
          "[shard]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0}, 7)).ok());
  v1::PushRequest r = PushScalar(0, 1, 0, 1.0f);
  r.set_map_version(3);
  absl::StatusOr<bool> result = shard.Push(r);
  REQUIRE(StaleMapVersion(result.status()).has_value());
  CHECK(*StaleMapVersion(result.status()) == 7);
}

}  // namespace
}  // namespace cairn
