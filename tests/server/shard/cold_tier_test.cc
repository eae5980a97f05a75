// The cold tier (TableSpec.cold_tier, server/shard/cold_rows.h) on a real
// RocksDB store: a row evicted from memory goes there and comes back at its
// next pull or push with the values, momentum and update count it had;
// admission does not count it again; a partition's export (checkpoint,
// replica transfer) carries both tiers in key order, and a table restored
// from it trains on exactly as the original.
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/cold_rows.h"
#include "server/shard/sparse_table.h"
#include "server/shard/table.h"
#include "tests/server/shard/sparse_rows_util.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::kSparsePartitions;
using testing::PullRows;
using testing::PushRows;

v1::TableSpec Spec(uint32_t min_count = 1) {
  v1::TableSpec spec = testing::SparseSpec();
  spec.set_id(3);
  spec.set_capacity_rows(4);
  spec.set_evict_to(0.5);
  spec.set_min_count(min_count);
  spec.set_cold_tier(true);
  spec.mutable_optimizer()->set_momentum(0.5f);
  return spec;
}

std::unique_ptr<ColdRowStore> OpenStore(const std::string& name) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("cold_tier_test");
  REQUIRE(dir.ok());
  absl::StatusOr<std::unique_ptr<ColdRowStore>> store = ColdRowStore::Open(*dir + "/" + name);
  INFO(store.status().message());
  REQUIRE(store.ok());
  return *std::move(store);
}

std::unique_ptr<Table> MakeTable(const v1::TableSpec& spec, ColdRowStore* cold) {
  auto table =
      Table::Create(spec, kSparsePartitions, std::vector<bool>(kSparsePartitions, true), cold);
  INFO(table.status().message());
  REQUIRE(table.ok());
  return std::move(*table);
}

float PullOne(const Table& t, Key key) { return PullRows(t, {key})[0]; }

TEST_CASE("a row evicted to the cold tier comes back with its values, momentum and update count",
          "[shard][eviction][cold]") {
  auto cold = OpenStore("a");
  auto table = MakeTable(Spec(), cold.get());
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  // The same pushes to a table without a cold tier and no capacity: the
  // reference every value is checked against.
  v1::TableSpec plain = Spec();
  plain.set_cold_tier(false);
  plain.set_capacity_rows(0);
  plain.set_evict_to(0);
  auto reference = MakeTable(plain, nullptr);
  auto both = [&](const std::vector<Key>& keys) {
    PushRows(*table, keys);
    PushRows(*reference, keys);
  };
  both({1});
  both({1});                   // 1: v = 1, then 1.5 (momentum 0.5)
  for (Key k : {2, 3, 4}) both({k});
  both({5});                   // 5 rows > 4: back to 2 (4 and 5 kept)
  CHECK(table->NumKeys() == 2);
  CHECK(sparse.EvictedRows() == 3);
  CHECK(sparse.ColdRows() == 3);
  CHECK(sparse.SpilledRows() == 3);
  CHECK(sparse.AdmittedRows() == 5);
  // A pull reads the evicted rows from the cold tier, not the initializer,
  // and leaves them there.
  for (Key k : {1, 2, 3}) CHECK(PullOne(*table, k) == PullOne(*reference, k));
  CHECK(PullOne(*table, 1) == 0.5f - 1.0f - 1.5f);
  CHECK(sparse.ColdRows() == 3);
  // A push brings 1 back with its momentum: v = 0.75 + 1.
  both({1});
  CHECK(sparse.ColdRows() == 2);
  CHECK(sparse.AdmittedRows() == 5);  // back from the cold tier, not admitted again
  CHECK(PullOne(*table, 1) == 0.5f - 1.0f - 1.5f - 1.75f);
  for (Key k = 1; k <= 5; ++k) CHECK(PullOne(*table, k) == PullOne(*reference, k));
  // An id never seen reads the initializer.
  CHECK(PullOne(*table, 99) == 0.5f);
}

TEST_CASE("an id in the cold tier is not counted for admission again", "[shard][admission][cold]") {
  auto cold = OpenStore("b");
  auto table = MakeTable(Spec(/*min_count=*/2), cold.get());
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  for (Key k : {1, 2, 3, 4, 5}) {
    PushRows(*table, {k});
    PushRows(*table, {k});  // admitted at its second push
  }
  REQUIRE(sparse.ColdRows() == 3);  // 1, 2, 3
  const float before = PullOne(*table, 1);
  CHECK(before == 0.5f - 1.0f);
  PushRows(*table, {1});  // applied at once: 1 had a row
  CHECK(PullOne(*table, 1) == before - 1.5f);
  CHECK(sparse.NotAdmittedPushes() == 5);
}

TEST_CASE("a partition's export carries both tiers in key order, and a restored table trains on "
          "as the original",
          "[shard][checkpoint][cold]") {
  auto cold = OpenStore("c");
  auto table = MakeTable(Spec(), cold.get());
  std::vector<Key> keys;
  for (Key k = 1; k <= 40; ++k) keys.push_back(k * 7919);
  for (Key k : keys) PushRows(*table, {k});
  PushRows(*table, {keys[0], keys[1]});
  auto& sparse = dynamic_cast<SparseTable&>(*table);
  REQUIRE(sparse.ColdRows() + table->NumKeys() == keys.size());
  REQUIRE(sparse.ColdRows() > 30);

  auto cold_restored = OpenStore("d");
  auto restored = MakeTable(Spec(), cold_restored.get());
  uint64_t exported = 0;
  for (uint32_t p = 0; p < kSparsePartitions; ++p) {
    auto rows = table->ExportPartition(p);
    REQUIRE(rows.ok());
    for (size_t i = 1; i < rows->keys.size(); ++i) CHECK(rows->keys[i - 1] < rows->keys[i]);
    exported += rows->keys.size();
    auto decoded = checkpoint::DecodeRows(checkpoint::EncodeRows(*rows), "test");
    REQUIRE(decoded.ok());
    REQUIRE(restored->ImportPartition(p, *decoded).ok());
  }
  CHECK(exported == keys.size());
  // Rows above the capacity went to the cold tier as each partition loaded.
  auto& restored_sparse = dynamic_cast<SparseTable&>(*restored);
  CHECK(restored->NumKeys() <= 4);
  CHECK(restored->NumKeys() + restored_sparse.ColdRows() == keys.size());
  for (Key k : keys) CHECK(PullOne(*restored, k) == PullOne(*table, k));
  // Both go on alike: the restored table evicts to its own cold tier.
  for (int round = 0; round < 2; ++round) {
    for (Key k : keys) {
      PushRows(*table, {k});
      PushRows(*restored, {k});
    }
  }
  for (Key k : keys) CHECK(PullOne(*restored, k) == PullOne(*table, k));
  CHECK(dynamic_cast<SparseTable&>(*restored).ColdRows() > 30);
}

TEST_CASE("cold_tier without a store is refused, naming the table", "[shard][cold]") {
  auto table = Table::Create(Spec(), kSparsePartitions, std::vector<bool>(kSparsePartitions, true));
  REQUIRE_FALSE(table.ok());
  CHECK(table.status().message() == "table emb: cold_tier needs the server's cold tier store");
}

TEST_CASE("a closed cold tier store deletes its directory", "[shard][cold]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("cold_tier_test");
  REQUIRE(dir.ok());
  {
    auto store = ColdRowStore::Open(*dir + "/e");
    REQUIRE(store.ok());
    const std::vector<float> values = {1, 2};
    REQUIRE((*store)->Put(1, {{2, 3, values, {}}}).ok());
    CHECK(std::filesystem::exists(*dir + "/e"));
  }
  CHECK_FALSE(std::filesystem::exists(*dir + "/e"));
}

}  // namespace
}  // namespace cairn
