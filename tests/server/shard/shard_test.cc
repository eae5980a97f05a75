// The shard's domain logic without gRPC: BSP aggregation, clocks and
// barriers, deadlines, exactly-once pushes, and validation leaving values
// unchanged.
#include "server/shard/shard.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <limits>

#include "common/bytes.h"
#include "common/status_conversion.h"

namespace cairn {
namespace {

v1::TableSpec ScalarTable(const std::string& name, v1::Consistency consistency,
                          v1::Aggregation aggregation = v1::AGGREGATION_MEAN) {
  v1::TableSpec t;
  t.set_name(name);
  t.set_kind(v1::TABLE_KIND_DENSE);
  t.add_shape(1);
  t.set_chunk_size(1);
  t.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  t.mutable_optimizer()->set_learning_rate(1.0f);
  t.mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  t.set_consistency(consistency);
  t.set_aggregation(aggregation);
  return t;
}

v1::JobSpec Job(std::vector<v1::TableSpec> tables, uint32_t partitions = 4) {
  v1::JobSpec job;
  for (size_t i = 0; i < tables.size(); ++i) {
    tables[i].set_id(static_cast<uint32_t>(i));
    *job.add_tables() = tables[i];
  }
  job.set_num_partitions(partitions);
  return job;
}

v1::PartitionMap Map(uint32_t partitions, std::vector<uint32_t> workers, uint64_t version = 1,
                     uint32_t server = 0) {
  v1::PartitionMap map;
  map.set_version(version);
  map.set_num_partitions(partitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < partitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(server);
  }
  for (uint32_t w : workers) {
    v1::Member* m = map.add_workers();
    m->set_id(w);
    m->set_role(v1::MEMBER_ROLE_WORKER);
    m->set_state(v1::MEMBER_STATE_ALIVE);
  }
  return map;
}

v1::PushRequest PushScalar(uint32_t worker, uint64_t seq, int64_t clock, float grad,
                           uint32_t table_id = 0, const std::string& table = "w") {
  v1::PushRequest r;
  r.set_map_version(1);
  r.set_worker_id(worker);
  r.set_sequence(seq);
  r.set_clock(clock);
  v1::TableValues* tv = r.add_tables();
  tv->set_table_id(table_id);
  tv->set_table(table);
  tv->set_keys(KeysToBytes({0}));
  tv->set_values(FloatsToBytes({grad}));
  return r;
}

v1::ClockRequest Tick(uint32_t worker, int64_t clock, bool leaving = false) {
  v1::ClockRequest r;
  r.set_map_version(1);
  r.set_worker_id(worker);
  r.set_clock(clock);
  r.set_leaving(leaving);
  return r;
}

struct PullResult {
  bool done = false;
  absl::Status status;
  v1::PullRequest request;
  v1::PullResponse response;
  float value() const {
    float v;
    std::memcpy(&v, response.tables(0).values().data(), sizeof(v));
    return v;
  }
};

void StartPull(Shard& shard, PullResult* out, uint32_t worker, int64_t clock,
               absl::Time deadline = absl::InfiniteFuture()) {
  out->request.set_map_version(1);
  out->request.set_worker_id(worker);
  out->request.set_clock(clock);
  v1::TableKeys* tk = out->request.add_tables();
  tk->set_table_id(0);
  tk->set_table("w");
  tk->set_keys(KeysToBytes({0}));
  shard.Pull(&out->request, &out->response, deadline, [out](absl::Status s) {
    out->status = s;
    out->done = true;
  });
}

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
