// Admission of new ids into a sparse table (TableSpec.min_count, issue
// field case B24's first defence): an id gets a row only at its
// min_count-th push; earlier pushes are counted, not stored; a pull of it
// reads the initializer's values; the counts travel with the partition
// (checkpoints, replica transfers) and survive a round trip of the codec.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/grad_buffer.h"
#include "server/shard/row_eviction.h"
#include "server/shard/sparse_table.h"
#include "server/shard/table.h"
#include "tests/server/shard/sparse_rows_util.h"

namespace cairn {
namespace {

using testing::kSparsePartitions;
using testing::MakeSparseTable;
using testing::PullRows;
using testing::PushRows;

v1::TableSpec Spec(uint32_t min_count) {
  v1::TableSpec spec = testing::SparseSpec();
  spec.set_min_count(min_count);
  return spec;
}

TEST_CASE("an id gets a row exactly at its min_count-th push, and only that push updates it",
          "[shard][admission]") {
  auto table = MakeSparseTable(Spec(3));
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  PushRows(*table, {10}, 1.0f);
  PushRows(*table, {10, 20}, 1.0f);
  CHECK(table->NumKeys() == 0);
  CHECK(sparse.NumPending() == 2);
  CHECK(sparse.NotAdmittedPushes() == 3);
  CHECK(sparse.AdmittedRows() == 0);
  // Not admitted: the initializer's values.
  CHECK(PullRows(*table, {10, 20}) == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  PushRows(*table, {10}, 0.25f);  // the third: admitted, this gradient applied
  CHECK(table->NumKeys() == 1);
  CHECK(sparse.AdmittedRows() == 1);
  CHECK(sparse.NumPending() == 1);
  CHECK(PullRows(*table, {10}) == std::vector<float>{0.25f, 0.25f});
  PushRows(*table, {10}, 0.25f);  // a row now: every push applies
  CHECK(PullRows(*table, {10}) == std::vector<float>{0.0f, 0.0f});
  CHECK(sparse.NotAdmittedPushes() == 3);

  // Through the buffered path (BSP, repeated keys) the same rule: a
  // buffered push of an id counts once.
  GradBuffer buffer;
  const std::vector<float> g = {1, 1, 1, 1};
  table->Gather(KeysToBytes({20, 20}), 2,
                absl::string_view(reinterpret_cast<const char*>(g.data()), 16), &buffer);
  table->Apply(buffer);
  CHECK(table->NumKeys() == 1);  // 20's second push
  table->Apply(buffer);
  CHECK(table->NumKeys() == 2);  // its third: admitted
  CHECK(sparse.AdmittedRows() == 2);
  CHECK(PullRows(*table, {20}) == std::vector<float>{-1.5f, -1.5f});  // 0.5 - (1 + 1)
}

TEST_CASE("min_count 1 (or unset) gives every id a row at its first push", "[shard][admission]") {
  for (uint32_t m : {0u, 1u}) {
    auto table = MakeSparseTable(Spec(m));
    PushRows(*table, {1, 2, 3}, 1.0f);
    CHECK(table->NumKeys() == 3);
    CHECK(dynamic_cast<SparseTable&>(*table).NumPending() == 0);
  }
}

TEST_CASE("counts of ids waiting for admission travel with their partition", "[shard][admission]") {
  auto table = MakeSparseTable(Spec(3));
  std::vector<Key> keys;
  for (Key k = 1; k <= 40; ++k) keys.push_back(k * 7919);
  PushRows(*table, keys, 1.0f);
  PushRows(*table, keys, 1.0f);
  PushRows(*table, {keys[0]}, 1.0f);  // admitted
  auto restored = MakeSparseTable(Spec(3));
  uint64_t pending = 0;
  for (uint32_t p = 0; p < kSparsePartitions; ++p) {
    auto rows = table->ExportPartition(p);
    REQUIRE(rows.ok());
    pending += rows->pending_keys.size();
    for (uint32_t c : rows->pending_counts) CHECK(c == 2);
    // Through the checkpoint codec, as a checkpoint or a replica transfer.
    auto decoded = checkpoint::DecodeRows(checkpoint::EncodeRows(*rows), "test");
    REQUIRE(decoded.ok());
    CHECK(*decoded == *rows);
    REQUIRE(restored->ImportPartition(p, *decoded).ok());
  }
  CHECK(pending == 39);
  // The restored table admits each at its third push, as the original would.
  PushRows(*restored, {keys[1]}, 1.0f);
  CHECK(restored->NumKeys() == 2);
  CHECK(PullRows(*restored, {keys[1]}) == std::vector<float>{-0.5f, -0.5f});
  CHECK(PullRows(*restored, {keys[0]}) == std::vector<float>{-0.5f, -0.5f});
}

TEST_CASE("B24: with a capacity, at most capacity_rows ids wait for admission, those with the "
          "fewest pushes go first, and a dropped id counts again from its next push",
          "[shard][admission][cases]") {
  v1::TableSpec spec = Spec(3);
  spec.set_capacity_rows(10);
  spec.set_evict_to(0.5);
  auto table = MakeSparseTable(spec);
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  // Hot ids 1..4 seen twice, then a stream of ids seen once.
  for (int i = 0; i < 2; ++i) PushRows(*table, {1, 2, 3, 4}, 1.0f);
  for (Key k = 100; k < 106; ++k) PushRows(*table, {k}, 1.0f);
  CHECK(sparse.NumPending() == 10);  // at the bound: nothing dropped yet
  CHECK(sparse.DroppedPending() == 0);
  PushRows(*table, {106}, 1.0f);  // 11 waiting: back to 5
  CHECK(sparse.NumPending() == 5);
  CHECK(sparse.DroppedPending() == 6);
  // Kept: the hot ids (2 pushes each) and the largest key of those seen
  // once; each hot id is admitted at its third push, as without a bound.
  PushRows(*table, {1, 2, 3, 4}, 0.25f);
  CHECK(table->NumKeys() == 4);
  CHECK(PullRows(*table, {1}) == std::vector<float>{0.25f, 0.25f});
  CHECK(sparse.NumPending() == 1);
  // 100 was dropped: two more pushes leave it waiting, the third admits it.
  PushRows(*table, {100}, 1.0f);
  PushRows(*table, {100}, 1.0f);
  CHECK(table->NumKeys() == 4);
  PushRows(*table, {100}, 1.0f);
  CHECK(table->NumKeys() == 5);

  // A stream of 100,000 ids seen once never holds more than the bound.
  uint64_t most = 0;
  for (Key k = 1000; k < 101000; ++k) {
    PushRows(*table, {k}, 1.0f);
    most = std::max<uint64_t>(most, sparse.NumPending());
  }
  CHECK(most == 10);
  CHECK(table->NumKeys() == 5);
}

TEST_CASE("RowEviction drops the waiting ids with the fewest pushes, ties by key",
          "[shard][admission]") {
  const RowEviction bound(4, 0.5);
  CHECK(bound.PendingVictims({1, 2, 3, 4}, {1, 1, 1, 1}).empty());
  CHECK(bound.PendingVictims({9, 8, 7, 6, 5}, {2, 1, 3, 1, 1}) == std::vector<Key>{5, 6, 8});
}

}  // namespace
}  // namespace cairn
