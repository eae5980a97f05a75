// Table::ExportPartition / ImportPartition: bit-exact round trips of dense and
// sparse partitions with optimizer slots, and rejected imports; the keys a
// sparse table takes as it gains partitions; the keys and bytes counted per
// partition (Table::CountKeys).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "common/partitioning.h"
#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn {
namespace {

using testing::B10Keys;
using testing::DenseAdagrad;
using testing::Owned;
using testing::SparseAdam;
using testing::Train;

constexpr uint32_t kPartitions = 4;

std::unique_ptr<Table> MakeTable(const v1::TableSpec& spec, std::vector<bool> owned) {
  auto table = Table::Create(spec, kPartitions, owned);
  REQUIRE(table.ok());
  return std::move(*table);
}

std::vector<Key> AllChunks() {
  std::vector<Key> keys;
  for (Key k = 0; k < 14; ++k) keys.push_back(k);  // 40 elements in chunks of 3
  return keys;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string ReadAll(const Table& table, const std::vector<Key>& keys) {
  std::string out;
  table.Read(KeysToBytes(keys), keys.size(), &out);
  return out;
}

TEST_CASE("dense partitions round-trip bit-exactly with Adagrad slots and steps") {
  auto source = MakeTable(DenseAdagrad(), Owned(kPartitions, 1, 0));
  Train(*source, AllChunks(), 5);
  auto target = MakeTable(DenseAdagrad(), Owned(kPartitions, 1, 0));
  REQUIRE(ReadAll(*source, AllChunks()) != ReadAll(*target, AllChunks()));

  uint64_t keys_seen = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    auto rows = source->ExportPartition(p);
    REQUIRE(rows.ok());
    CHECK(rows->slots_per_element == 1);
    CHECK(rows->slots.size() == rows->values.size());
    for (int64_t step : rows->steps) CHECK(step == 5);
    keys_seen += rows->keys.size();
    REQUIRE(target->ImportPartition(p, *rows).ok());
    auto back = target->ExportPartition(p);
    REQUIRE(back.ok());
    CHECK(back->keys == rows->keys);
    CHECK(back->steps == rows->steps);
    CHECK(SameBits(back->values, rows->values));
    CHECK(SameBits(back->slots, rows->slots));
  }
  CHECK(keys_seen == 14);
  // The last chunk holds the 40th element alone.
  auto last = source->ExportPartition(kPartitions - 1);
  REQUIRE(last.ok());
  CHECK(last->keys.back() == 13);
  CHECK(last->lengths.back() == 1);
  CHECK(ReadAll(*source, AllChunks()) == ReadAll(*target, AllChunks()));
}

TEST_CASE("sparse partitions round-trip keys 0, 2^63 and 2^64-1 with Adam slots") {
  auto source = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));
  Train(*source, B10Keys(), 3);
  REQUIRE(source->NumKeys() == 102);
  auto target = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));

  std::vector<Key> exported;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    auto rows = source->ExportPartition(p);
    REQUIRE(rows.ok());
    CHECK(rows->slots_per_element == 2);
    CHECK(rows->slots.size() == 2 * rows->values.size());
    CHECK(std::is_sorted(rows->keys.begin(), rows->keys.end()));
    for (Key k : rows->keys) CHECK(SparsePartition(k, kPartitions) == p);
    for (int64_t step : rows->steps) CHECK(step == 3);
    exported.insert(exported.end(), rows->keys.begin(), rows->keys.end());
    REQUIRE(target->ImportPartition(p, *rows).ok());
    auto back = target->ExportPartition(p);
    REQUIRE(back.ok());
    CHECK(back->keys == rows->keys);
    CHECK(SameBits(back->values, rows->values));
    CHECK(SameBits(back->slots, rows->slots));
  }
  std::sort(exported.begin(), exported.end());
  CHECK(exported == B10Keys());
  CHECK(target->NumKeys() == 102);
  CHECK(ReadAll(*source, B10Keys()) == ReadAll(*target, B10Keys()));
}

TEST_CASE("a table counts the keys and value bytes of the partitions asked, as exported") {
  auto dense = MakeTable(DenseAdagrad(), Owned(kPartitions, 1, 0));
  auto sparse = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));
  Train(*dense, AllChunks(), 1);
  Train(*sparse, B10Keys(), 1);
  // Some partitions, every one, none, and a mask shorter than the count.
  const std::vector<std::vector<bool>> masks = {{true, false, true, false},
                                                {false, true, false, true},
                                                {true, true, true, true},
                                                {false, false, false, false},
                                                {false, true}};
  for (const Table* table : {dense.get(), sparse.get()}) {
    uint64_t all_keys = 0;
    for (const std::vector<bool>& in : masks) {
      INFO(table->spec().name() << ", mask of " << in.size());
      Table::KeyCount expected;
      for (uint32_t p = 0; p < kPartitions && p < in.size(); ++p) {
        if (!in[p]) continue;
        auto rows = table->ExportPartition(p);
        REQUIRE(rows.ok());
        expected.keys += rows->keys.size();
        expected.value_bytes += rows->values.size() * sizeof(float);
      }
      const Table::KeyCount count = table->CountKeys(in);
      CHECK(count.keys == expected.keys);
      CHECK(count.value_bytes == expected.value_bytes);
      all_keys = std::max(all_keys, count.keys);
    }
    CHECK(all_keys == table->NumKeys());  // the mask of every partition
  }
  CHECK(sparse->CountKeys({true, true, true, true}).value_bytes == sparse->NumValueBytes());
  CHECK(dense->CountKeys({true, true, true, true}).value_bytes == 40 * sizeof(float));
}

TEST_CASE("an import is rejected whole when it does not fit the table") {
  auto source = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));
  Train(*source, B10Keys(), 1);
  auto rows = source->ExportPartition(0);
  REQUIRE(rows.ok());
  REQUIRE(!rows->keys.empty());

  SECTION("a partition not held here") {
    auto target = MakeTable(SparseAdam(), Owned(kPartitions, 2, 1));
    const absl::Status s = target->ImportPartition(0, *rows);
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(s.message()), Catch::Contains("table E: partition 0"));
  }
  SECTION("a key of another partition") {
    auto target = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));
    const absl::Status s = target->ImportPartition(1, *rows);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("belongs to partition 0, not 1"));
    CHECK(target->NumKeys() == 0);
  }
  SECTION("a partition that already holds rows") {
    const absl::Status s = source->ImportPartition(0, *rows);
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(s.message()), Catch::Contains("already holds rows"));
  }
  SECTION("slots of another optimizer") {
    auto target = MakeTable(SparseAdam(), Owned(kPartitions, 1, 0));
    rows->slots_per_element = 1;
    rows->slots.resize(rows->values.size());
    const absl::Status s = target->ImportPartition(0, *rows);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("optimizer keeps 2"));
  }
  SECTION("dense rows of another chunking") {
    auto dense = MakeTable(DenseAdagrad(), Owned(kPartitions, 1, 0));
    auto chunks = dense->ExportPartition(0);
    REQUIRE(chunks.ok());
    const std::vector<float> before = chunks->values;
    chunks->lengths[0] = 2;
    chunks->values.pop_back();
    chunks->slots.pop_back();
    std::fill(chunks->values.begin(), chunks->values.end(), 9.0f);
    const absl::Status s = dense->ImportPartition(0, *chunks);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("table W: partition 0 row 0"));
    auto after = dense->ExportPartition(0);
    REQUIRE(after.ok());
    CHECK(SameBits(after->values, before));
  }
}

TEST_CASE("a sparse table takes the keys of a partition only once it holds the partition") {
  // Server 0 of 2 holds partitions 0 and 2; 1 and 3 arrive one by one.
  auto table = MakeTable(SparseAdam(), Owned(kPartitions, 2, 0));
  std::vector<Key> keys;
  for (Key k = 0; k < 64; ++k) keys.push_back(k * 7919 + 1);
  const std::string bytes = KeysToBytes(keys);
  auto first_not_held = [&](const std::vector<bool>& held) -> int {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!held[SparsePartition(keys[i], kPartitions)]) return static_cast<int>(i);
    }
    return -1;
  };
  std::vector<bool> held = Owned(kPartitions, 2, 0);
  for (uint32_t gained : {1u, 3u}) {
    const int i = first_not_held(held);
    REQUIRE(i >= 0);
    const absl::StatusOr<uint64_t> refused = table->CheckKeys(bytes, keys.size());
    CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(refused.status().message()),
               Catch::Contains(absl::StrCat("key ", keys[i], " is in partition ")));
    table->AddPartition(gained);
    held[gained] = true;
  }
  const absl::StatusOr<uint64_t> floats = table->CheckKeys(bytes, keys.size());
  REQUIRE(floats.ok());
  CHECK(*floats == keys.size() * 4);
}

}  // namespace
}  // namespace cairn
