// A sparse table's time-to-live in clocks (TableSpec.ttl_clocks): a row
// not updated during ttl_clocks consecutive iterations is deleted when the
// last of them closes; the rows updated meanwhile keep their trained values
// and slots; a deleted id reads the initializer's values again and a later
// push starts it over. Exact on a table, and through a Shard under BSP,
// where the clock comes from the workers' ticks.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "server/shard/shard.h"
#include "server/shard/sparse_table.h"
#include "server/shard/table.h"
#include "tests/server/shard/shard_test_util.h"
#include "tests/server/shard/sparse_rows_util.h"

namespace cairn {
namespace {

using testing::MakeSparseTable;
using testing::PushRows;

v1::TableSpec TtlSpec(uint64_t ttl) {
  v1::TableSpec spec = testing::SparseSpec();
  spec.set_ttl_clocks(ttl);
  spec.mutable_optimizer()->set_momentum(0.5f);
  return spec;
}

float PullOne(const Table& t, Key key) { return testing::PullRows(t, {key})[0]; }

TEST_CASE("a row idle for ttl_clocks clocks is deleted when the last of them closes",
          "[shard][ttl]") {
  auto table = MakeSparseTable(TtlSpec(2));
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  PushRows(*table, {1, 2});  // iteration 0
  table->AdvanceClock(1);    // both last updated at clock 0
  PushRows(*table, {2});     // iteration 1
  table->AdvanceClock(2);    // 1 idle for iteration 1: kept
  CHECK(table->NumKeys() == 2);
  table->AdvanceClock(2);  // the same clock again: nothing changes
  table->AdvanceClock(1);  // nor does an older one
  CHECK(table->NumKeys() == 2);
  table->AdvanceClock(3);  // 1 idle for iterations 1 and 2: deleted
  CHECK(table->NumKeys() == 1);
  CHECK(sparse.ExpiredRows() == 1);
  CHECK(PullOne(*table, 1) == 0.5f);                // the initializer's value
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f);  // kept as trained
  PushRows(*table, {2});  // iteration 3: momentum survived (v = 0.75 + 1)
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f - 1.75f);
  table->AdvanceClock(4);
  table->AdvanceClock(5);
  CHECK(table->NumKeys() == 1);
  table->AdvanceClock(6);  // 2 idle for iterations 4 and 5
  CHECK(table->NumKeys() == 0);
  CHECK(sparse.ExpiredRows() == 2);
  // A deleted id pushed again starts over from the initializer.
  PushRows(*table, {1});
  CHECK(PullOne(*table, 1) == -0.5f);
}

TEST_CASE("a table jumping several clocks at once deletes every row idle for longer than its "
          "time-to-live",
          "[shard][ttl]") {
  auto table = MakeSparseTable(TtlSpec(3));
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  table->AdvanceClock(1);
  PushRows(*table, {1, 2, 3});  // at clock 1
  table->AdvanceClock(3);
  PushRows(*table, {3});  // at clock 3
  table->AdvanceClock(10);
  CHECK(table->NumKeys() == 0);
  CHECK(sparse.ExpiredRows() == 3);
}

TEST_CASE("rows a table holds before its first clock (restored or transferred) count as "
          "updated just before it",
          "[shard][ttl]") {
  auto source = MakeSparseTable(TtlSpec(2));
  PushRows(*source, {4, 5, 6, 7});
  auto table = MakeSparseTable(TtlSpec(2));
  for (uint32_t p = 0; p < testing::kSparsePartitions; ++p) {
    auto rows = source->ExportPartition(p);
    REQUIRE(rows.ok());
    REQUIRE(table->ImportPartition(p, *rows).ok());
  }
  REQUIRE(table->NumKeys() == 4);
  table->AdvanceClock(100);  // a job resumed at clock 99
  table->AdvanceClock(101);
  CHECK(table->NumKeys() == 4);
  PushRows(*table, {5});  // at clock 101
  table->AdvanceClock(102);
  CHECK(table->NumKeys() == 1);
  CHECK(PullOne(*table, 5) == 0.5f - 1.0f - 1.5f);
}

TEST_CASE("with a long time-to-live, scans run every ttl_clocks / 8 clocks", "[shard][ttl]") {
  auto table = MakeSparseTable(TtlSpec(16));  // a scan every 2 clocks
  table->AdvanceClock(1);                     // scanned (nothing to delete)
  PushRows(*table, {1});                      // at clock 1: due above clock 17
  for (int64_t c = 2; c <= 18; ++c) table->AdvanceClock(c);
  CHECK(table->NumKeys() == 1);  // 18 is not a scan (1, 3, ..., 17, 19)
  table->AdvanceClock(19);
  CHECK(table->NumKeys() == 0);
}

TEST_CASE("eviction and a time-to-live together: rows moved by eviction keep their clocks",
          "[shard][ttl]") {
  v1::TableSpec spec = TtlSpec(3);
  spec.set_capacity_rows(4);
  spec.set_evict_to(0.5);
  auto table = MakeSparseTable(spec);
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  for (Key k : {1, 2, 3, 4}) PushRows(*table, {k});
  table->AdvanceClock(1);
  PushRows(*table, {4});  // at clock 1
  PushRows(*table, {5});  // at clock 1; 5 rows: back to 2 (4 and 5 stay)
  REQUIRE(table->NumKeys() == 2);
  CHECK(sparse.EvictedRows() == 3);
  table->AdvanceClock(3);
  PushRows(*table, {4});  // at clock 3
  table->AdvanceClock(4);
  CHECK(table->NumKeys() == 2);
  table->AdvanceClock(5);  // 5 was last updated at clock 1: deleted; 4 stays
  CHECK(table->NumKeys() == 1);
  CHECK(sparse.ExpiredRows() == 1);
  CHECK(PullOne(*table, 5) == 0.5f);
  CHECK(PullOne(*table, 4) == 0.5f - 1.0f - 1.5f - 1.75f);
}

TEST_CASE("a table without a time-to-live keeps idle rows", "[shard][ttl]") {
  auto table = MakeSparseTable(testing::SparseSpec());
  PushRows(*table, {1, 2});
  table->AdvanceClock(1);
  table->AdvanceClock(1000000);
  CHECK(table->NumKeys() == 2);
}

// Through a Shard: one worker under BSP pushes key 1 in iteration 0 and
// key 2 in every iteration; with ttl_clocks 2, key 1 goes when iteration 2
// closes, and Stats counts it.
TEST_CASE("a shard deletes idle rows as its workers' clocks close iterations", "[shard][ttl]") {
  v1::TableSpec spec = TtlSpec(2);
  spec.set_consistency(v1::CONSISTENCY_BSP);
  spec.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  Shard shard(0, Job({spec}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  auto push = [&](uint64_t seq, int64_t clock, const std::vector<Key>& keys) {
    v1::PushRequest r;
    r.set_map_version(1);
    r.set_worker_id(0);
    r.set_incarnation(1);
    r.set_sequence(seq);
    r.set_clock(clock);
    v1::TableValues* tv = r.add_tables();
    tv->set_table_id(0);
    tv->set_table("emb");
    tv->set_keys(KeysToBytes(keys));
    tv->set_values(FloatsToBytes(std::vector<float>(keys.size() * 2, 1.0f)));
    tv->add_shape(static_cast<int64_t>(keys.size()));
    tv->add_shape(2);
    tv->set_dtype(v1::DTYPE_FLOAT32);
    auto applied = shard.Push(r);
    INFO(applied.status().message());
    REQUIRE(applied.ok());
  };
  auto stats = [&]() {
    v1::StatsResponse s;
    shard.Stats(&s);
    REQUIRE(s.tables_size() == 1);
    return s.tables(0);
  };
  push(1, 0, {1, 2});
  REQUIRE(shard.Clock(Tick(0, 1)).ok());  // iteration 0 closes
  CHECK(stats().num_keys() == 2);
  push(2, 1, {2});
  REQUIRE(shard.Clock(Tick(0, 2)).ok());
  CHECK(stats().num_keys() == 2);
  push(3, 2, {2});
  REQUIRE(shard.Clock(Tick(0, 3)).ok());  // 1 idle in iterations 1 and 2
  CHECK(stats().num_keys() == 1);
  CHECK(stats().expired_rows() == 1);
}

}  // namespace
}  // namespace cairn
