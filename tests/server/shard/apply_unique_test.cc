// Table::ApplyUnique and ApplyIfDistinct, the paths a push with distinct
// keys takes under SSP and ASP: the same bits as Gather into a GradBuffer
// and Apply,
// for a dense table (the last chunk short) and a sparse one (rows created on
// first touch), over several steps of non-linear optimizers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/cpu_affinity.h"
#include "server/shard/fork_join.h"
#include "server/shard/grad_buffer.h"
#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn {
namespace {

constexpr uint32_t kPartitions = 4;

std::unique_ptr<Table> MakeTable(const v1::TableSpec& spec) {
  auto table = Table::Create(spec, kPartitions, std::vector<bool>(kPartitions, true));
  REQUIRE(table.ok());
  return std::move(*table);
}

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Every partition of `a` and `b` holds the same values, optimizer slots and
// steps.
void CheckSamePartitions(const Table& a, const Table& b) {
  for (uint32_t p = 0; p < kPartitions; ++p) {
    auto pa = a.ExportPartition(p);
    auto pb = b.ExportPartition(p);
    REQUIRE(pa.ok());
    REQUIRE(pb.ok());
    CHECK(*pa == *pb);
  }
}

void CheckSameBits(const v1::TableSpec& spec, const std::vector<Key>& keys, size_t floats) {
  auto gathered = MakeTable(spec);
  auto direct = MakeTable(spec);
  const std::string key_bytes = KeysToBytes(keys);
  REQUIRE(KeysAscending(key_bytes, keys.size()));
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> g(floats);
    for (size_t i = 0; i < floats; ++i) g[i] = 0.01f * step * (static_cast<float>(i % 7) - 3.0f);
    GradBuffer buffer;
    gathered->Gather(key_bytes, keys.size(), Bytes(g), &buffer);
    gathered->Apply(buffer);
    direct->ApplyUnique(key_bytes, keys.size(), Bytes(g));
  }
  std::string a, b;
  gathered->Read(key_bytes, keys.size(), &a);
  direct->Read(key_bytes, keys.size(), &b);
  REQUIRE(a.size() == floats * sizeof(float));
  CHECK(a == b);
  CheckSamePartitions(*gathered, *direct);
}

TEST_CASE("ApplyUnique updates a dense table bit for bit as Gather and Apply", "[shard]") {
  std::vector<Key> chunks;
  for (Key c = 0; c < 14; ++c) chunks.push_back(c);  // 40 elements in chunks of 3, last of 1
  CheckSameBits(testing::DenseAdagrad(), chunks, 40);
}

TEST_CASE("ApplyUnique updates a sparse table bit for bit as Gather and Apply", "[shard]") {
  const std::vector<Key> keys = testing::B10Keys();  // ascending, up to 2^64 - 1
  CheckSameBits(testing::SparseAdam(), keys, keys.size() * 4);
}

// Keys in any order, some created by earlier pushes and some new, over
// several steps, with and without a capacity (the eviction ticks must
// follow the same order): ApplyIfDistinct takes them and matches Gather and
// Apply bit for bit; a push with a repeated key is refused with no row
// changed, and then gathered as the shard does.
void CheckDistinctSameBits(const v1::TableSpec& spec) {
  auto gathered = MakeTable(spec);
  auto direct = MakeTable(spec);
  std::vector<Key> all;
  for (int step = 1; step <= 6; ++step) {
    std::vector<Key> keys;
    for (Key k = 0; k < 24; ++k) keys.push_back(((k * 7919 + step * 104729) % 61) * 0x9E3779B97F4A7C15ULL);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::reverse(keys.begin(), keys.end());  // descending, then shuffled a little
    std::swap(keys[1], keys[keys.size() - 2]);
    const bool repeat = step % 3 == 0;
    if (repeat) keys.push_back(keys[2]);
    const std::string key_bytes = KeysToBytes(keys);
    REQUIRE_FALSE(KeysAscending(key_bytes, keys.size()));
    std::vector<float> g(keys.size() * spec.width());
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.01f * step * (static_cast<float>(i % 5) - 2.0f);
    GradBuffer buffer;
    gathered->Gather(key_bytes, keys.size(), Bytes(g), &buffer);
    gathered->Apply(buffer);
    if (repeat) {
      std::string before, after;
      direct->Read(key_bytes, keys.size(), &before);
      CHECK_FALSE(direct->ApplyIfDistinct(key_bytes, keys.size(), Bytes(g)));
      direct->Read(key_bytes, keys.size(), &after);
      CHECK(before == after);
      GradBuffer summed;
      direct->Gather(key_bytes, keys.size(), Bytes(g), &summed);
      direct->Apply(summed);
    } else {
      CHECK(direct->ApplyIfDistinct(key_bytes, keys.size(), Bytes(g)));
    }
    all.insert(all.end(), keys.begin(), keys.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::string a, b;
  gathered->Read(KeysToBytes(all), all.size(), &a);
  direct->Read(KeysToBytes(all), all.size(), &b);
  CHECK(a == b);
  CHECK(gathered->NumKeys() == direct->NumKeys());
  CheckSamePartitions(*gathered, *direct);
}

TEST_CASE("ApplyIfDistinct updates a sparse table's unordered rows bit for bit as Gather and Apply",
          "[shard]") {
  v1::TableSpec spec = testing::SparseAdam();
  CheckDistinctSameBits(spec);
  spec.set_capacity_rows(30);  // evicts while the pushes run
  CheckDistinctSameBits(spec);
}

// A dense update or read of ForkJoin::kMinSplitBytes or more runs in pieces
// on the caller and the helper: the same values, slots and steps as on one
// thread, for a push applied from its bytes (with its new values read back
// as it goes) and for a gathered one scaled by a BSP mean, over several
// steps; ReadTo writes the values Read appends.
TEST_CASE("A large dense update split over two threads gives the bits of one thread",
          "[shard][fork_join]") {
  const uint64_t floats = (1 << 20) + 5;  // 4 MiB and a short last chunk
  v1::TableSpec spec = testing::DenseAdagrad({static_cast<int64_t>(floats)});
  spec.set_chunk_size(16384);
  spec.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  spec.mutable_optimizer()->set_momentum(0.9f);
  REQUIRE(floats * sizeof(float) >= ForkJoin::kMinSplitBytes);
  ForkJoin helper(AllowedCpus());  // on one CPU too: the pieces take turns
  auto make = [&](ForkJoin* h) {
    auto t = Table::Create(spec, kPartitions, std::vector<bool>(kPartitions, true), nullptr, h);
    REQUIRE(t.ok());
    return std::move(*t);
  };
  auto one = make(nullptr);
  auto two = make(&helper);
  std::vector<Key> chunks;
  for (Key c = 0; c < 65; ++c) chunks.push_back(c);
  const std::string key_bytes = KeysToBytes(chunks);
  std::vector<float> read_one(floats), read_two(floats);
  for (int step = 1; step <= 4; ++step) {
    std::vector<float> g(floats);
    for (size_t i = 0; i < floats; ++i) g[i] = 0.01f * step * (static_cast<float>(i % 11) - 5.0f);
    if (step % 2 == 1) {
      one->ApplyUniqueAndRead(key_bytes, chunks.size(), Bytes(g), read_one.data());
      two->ApplyUniqueAndRead(key_bytes, chunks.size(), Bytes(g), read_two.data());
      CHECK(read_one == read_two);
    } else {
      GradBuffer a, b;
      one->Gather(key_bytes, chunks.size(), Bytes(g), &a);
      two->Gather(key_bytes, chunks.size(), Bytes(g), &b);
      one->ApplyScaled(a, 1.0f / 3);
      two->ApplyScaled(b, 1.0f / 3);
    }
  }
  std::string a, b;
  one->Read(key_bytes, chunks.size(), &a);
  two->Read(key_bytes, chunks.size(), &b);
  CHECK(a == b);
  two->ReadTo(key_bytes, chunks.size(), read_two.data());
  CHECK(Bytes(read_two) == a);
  CheckSamePartitions(*one, *two);
}

TEST_CASE("KeysAscending accepts only strictly ascending keys", "[shard]") {
  CHECK(KeysAscending(KeysToBytes({}), 0));
  CHECK(KeysAscending(KeysToBytes({5}), 1));
  CHECK(KeysAscending(KeysToBytes({1, 2, 9}), 3));
  CHECK_FALSE(KeysAscending(KeysToBytes({1, 1, 2}), 3));  // a repeat: summed first (B07)
  CHECK_FALSE(KeysAscending(KeysToBytes({3, 2}), 2));
}

}  // namespace
}  // namespace cairn
