// Eviction from a sparse table at capacity (TableSpec.capacity_rows,
// server/shard/row_eviction.h; field case B24): the least recently updated
// rows go (or, under LFU, the least updated), in an exact order, until the
// table is back at evict_to of its capacity; the rows kept keep their trained values and slots; an evicted
// id reads the initializer's values again.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "server/shard/row_eviction.h"
#include "server/shard/sparse_table.h"
#include "server/shard/table.h"
#include "tests/server/shard/sparse_rows_util.h"

namespace cairn {
namespace {

using testing::kSparsePartitions;
using testing::MakeSparseTable;
using testing::PushRows;

v1::TableSpec Spec(uint64_t capacity, double evict_to) {
  v1::TableSpec spec = testing::SparseSpec();
  spec.set_capacity_rows(capacity);
  spec.set_evict_to(evict_to);
  spec.mutable_optimizer()->set_momentum(0.5f);
  return spec;
}

float PullOne(const Table& t, Key key) { return testing::PullRows(t, {key})[0]; }

TEST_CASE("the least recently updated rows go first, down to evict_to of the capacity",
          "[shard][eviction]") {
  auto table = MakeSparseTable(Spec(4, 0.5));
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  for (Key k : {1, 2, 3, 4}) PushRows(*table, {k});  // ticks 1..4
  CHECK(table->NumKeys() == 4);                 // at capacity: nothing goes yet
  PushRows(*table, {2});                            // 2 is the most recent now
  PushRows(*table, {5});                            // 5 rows > 4: back to 2
  CHECK(table->NumKeys() == 2);
  CHECK(sparse.EvictedRows() == 3);
  // Kept: 2 (updated twice: v = 1, then 1.5) and 5 (once), with their
  // values and momentum; evicted: 1, 3 and 4, which read the init again.
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f);
  CHECK(PullOne(*table, 5) == -0.5f);
  for (Key k : {1, 3, 4}) CHECK(PullOne(*table, k) == 0.5f);
  PushRows(*table, {2});  // its momentum survived the moves: v = 0.75 + 1
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f - 1.75f);
  // An evicted id pushed again starts over from the initializer.
  PushRows(*table, {3});
  CHECK(PullOne(*table, 3) == -0.5f);
}

TEST_CASE("a table at capacity keeps serving while new ids keep arriving, hot ids kept",
          "[shard][eviction]") {
  auto table = MakeSparseTable(Spec(100, 0.9));
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  const std::vector<Key> hot = {7, 77, 777};
  Key next = 1000;
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<Key> keys;
    for (int i = 0; i < 20; ++i) keys.push_back(next++);
    PushRows(*table, keys);
    PushRows(*table, hot);  // hot ids every batch
    REQUIRE(table->NumKeys() <= 100);
    for (Key k : keys) CHECK(PullOne(*table, k) == -0.5f);
  }
  CHECK(sparse.EvictedRows() == 3 + 4000 - table->NumKeys());
  // The hot rows were never evicted: 200 updates with momentum 0.5 each.
  float expected = 0.5f, v = 0.0f;
  for (int i = 0; i < 200; ++i) {
    v = 0.5f * v + 1.0f;
    expected -= v;
  }
  for (Key k : hot) CHECK(PullOne(*table, k) == expected);
  // What the partitions export is exactly what is held.
  uint64_t exported = 0;
  for (uint32_t p = 0; p < kSparsePartitions; ++p) {
    auto rows = table->ExportPartition(p);
    REQUIRE(rows.ok());
    exported += rows->keys.size();
  }
  CHECK(exported == table->NumKeys());
}

TEST_CASE("RowEviction picks victims by tick, then key, in descending row order",
          "[shard][eviction]") {
  const RowEviction none(0, 0.9);
  CHECK_FALSE(none.enabled());
  CHECK(none.Victims(std::vector<uint64_t>{1, 2}, std::vector<int64_t>{1, 1},
                     std::vector<Key>{1, 2})
            .empty());
  const RowEviction e(3, 0.34);  // target 1
  CHECK(e.Target() == 1);
  CHECK(e.Victims(std::vector<uint64_t>{5, 1, 9}, std::vector<int64_t>{1, 1, 1},
                  std::vector<Key>{1, 2, 3})
            .empty());
  // Update counts do not matter to LRU.
  const std::vector<uint32_t> v =
      e.Victims(std::vector<uint64_t>{5, 0, 9, 0}, std::vector<int64_t>{9, 9, 1, 9},
                std::vector<Key>{10, 30, 20, 40});
  CHECK(v == std::vector<uint32_t>{3, 1, 0});  // keeps row 2 (tick 9)
}

TEST_CASE("LFU picks victims by update count, then tick, then key, in descending row order",
          "[shard][eviction]") {
  const RowEviction e(4, 0.5, v1::EVICTION_POLICY_LFU);  // target 2
  // Rows:           0   1   2   3   4
  // updates:        5   1   1   7   1
  // last tick:      2   8   3   1   3
  // keys:          10  11  12  13   9
  // The three with one update go; between rows 2 and 4 (tick 3 each) the
  // key decides only their order, not whether they go.
  const std::vector<uint32_t> v =
      e.Victims(std::vector<uint64_t>{2, 8, 3, 1, 3}, std::vector<int64_t>{5, 1, 1, 7, 1},
                std::vector<Key>{10, 11, 12, 13, 9});
  CHECK(v == std::vector<uint32_t>{4, 2, 1});
  // Target 3: two victims, the once-updated rows with the oldest tick (3);
  // row 1, updated once but at tick 8, stays.
  const RowEviction f(4, 0.75, v1::EVICTION_POLICY_LFU);  // target 3
  CHECK(f.Victims(std::vector<uint64_t>{2, 8, 3, 1, 3}, std::vector<int64_t>{5, 1, 1, 7, 1},
                  std::vector<Key>{10, 11, 12, 13, 9}) == std::vector<uint32_t>{4, 2});
  // Counts first: row 0 (2 updates, tick 2) goes before row 4 (5 updates,
  // tick 3) although it is older.
  CHECK(e.Victims(std::vector<uint64_t>{2, 8, 3, 1, 3}, std::vector<int64_t>{2, 1, 1, 7, 5},
                  std::vector<Key>{10, 11, 12, 13, 9}) == std::vector<uint32_t>{2, 1, 0});
}

TEST_CASE("an LFU table keeps its often-pushed rows while ids seen once stream past",
          "[shard][eviction]") {
  v1::TableSpec spec = Spec(4, 0.5);
  spec.set_eviction(v1::EVICTION_POLICY_LFU);
  auto table = MakeSparseTable(spec);
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  for (int i = 0; i < 3; ++i) PushRows(*table, {1});  // 1: three updates
  PushRows(*table, {2});
  PushRows(*table, {2});                              // 2: two updates
  PushRows(*table, {3});
  PushRows(*table, {4});  // 4 rows: at capacity
  PushRows(*table, {5});  // over: down to 2, the once-updated 3, 4, 5 go
  CHECK(table->NumKeys() == 2);
  CHECK(sparse.EvictedRows() == 3);
  // Under LRU, 5 (the most recent) would have stayed and 1 would have gone.
  CHECK(PullOne(*table, 1) == 0.5f - 1.0f - 1.5f - 1.75f);
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f);
  for (Key k : {3, 4, 5}) CHECK(PullOne(*table, k) == 0.5f);
  // A stream of new ids, each pushed once: 1 and 2 are never evicted.
  for (Key k = 100; k < 140; ++k) PushRows(*table, {k});
  CHECK(PullOne(*table, 1) == 0.5f - 1.0f - 1.5f - 1.75f);
  CHECK(PullOne(*table, 2) == 0.5f - 1.0f - 1.5f);
}

}  // namespace
}  // namespace cairn
