// Partitioning of dense chunk ranges and sparse keys (common/partitioning.h).
// Field case B05: the top of the 64-bit key space must belong to a partition.
#include "common/partitioning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cairn/v1/types.pb.h"
#include "common/hash.h"

namespace cairn {
namespace {

constexpr uint64_t kMax = ~uint64_t{0};  // 2^64 - 1

// XXH64 of one 8-byte little-endian input with seed 0, written out from the
// xxHash specification (doc/xxhash_spec.md, "XXH64 algorithm description")
// so the test does not trust the library it checks.
uint64_t ReferenceXxh64(uint64_t input) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL,
                     kP3 = 0x165667B19E3779F9ULL, kP4 = 0x85EBCA77C2B2AE63ULL,
                     kP5 = 0x27D4EB2F165667C5ULL;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  uint64_t h = kP5 + 8;  // seed 0, length 8
  uint64_t k = input * kP2;
  k = rotl(k, 31) * kP1;
  h ^= k;
  h = rotl(h, 27) * kP1 + kP4;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

const std::vector<uint32_t> kPartitionCounts = {1, 2, 3, 7, 64};

}  // namespace

TEST_CASE("dense partition ranges cover [0, n) exactly once", "[partitioning][B05]") {
  const uint32_t P = GENERATE(1u, 2u, 3u, 7u, 64u);
  std::vector<uint64_t> sizes;
  for (uint64_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (uint64_t n : {uint64_t{1} << 32, (uint64_t{1} << 63) + 5, kMax - 1, kMax}) {
    sizes.push_back(n);
  }
  for (uint64_t n : sizes) {
    INFO("num_chunks=" << n << " P=" << P);
    uint64_t expected_begin = 0;
    for (uint32_t p = 0; p < P; ++p) {
      const KeyRange r = DensePartitionRange(n, P, p);
      REQUIRE(r.begin == expected_begin);
      REQUIRE(r.end >= r.begin);
      expected_begin = r.end;
    }
    REQUIRE(expected_begin == n);
  }
}

TEST_CASE("dense partition ranges match hand-computed cuts", "[partitioning]") {
  // floor(n * p / P) for p = 0..P.
  auto begins = [](uint64_t n, uint32_t P) {
    std::vector<uint64_t> out;
    for (uint32_t p = 0; p < P; ++p) out.push_back(DensePartitionRange(n, P, p).begin);
    out.push_back(DensePartitionRange(n, P, P - 1).end);
    return out;
  };
  CHECK(begins(10, 3) == std::vector<uint64_t>{0, 3, 6, 10});
  CHECK(begins(2, 3) == std::vector<uint64_t>{0, 0, 1, 2});
  CHECK(begins(5, 7) == std::vector<uint64_t>{0, 0, 1, 2, 2, 3, 4, 5});
  CHECK(begins(kMax, 2) == std::vector<uint64_t>{0, kMax / 2, kMax});
}

TEST_CASE("DensePartition names the partition whose range holds the chunk",
          "[partitioning]") {
  for (uint32_t P : {1u, 2u, 3u, 5u, 7u, 16u, 64u, 1000u}) {
    for (uint64_t n = 1; n <= 257; ++n) {
      for (uint64_t chunk = 0; chunk < n; ++chunk) {
        const uint32_t p = DensePartition(chunk, n, P);
        INFO("chunk=" << chunk << " num_chunks=" << n << " P=" << P << " -> " << p);
        REQUIRE(p < P);
        REQUIRE(DensePartitionRange(n, P, p).Contains(chunk));
      }
    }
  }
  // The top of a maximal key space.
  for (uint32_t P : {1u, 2u, 3u, 7u, 64u, 65536u}) {
    for (uint64_t chunk : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 63, kMax - 2, kMax - 1}) {
      const uint32_t p = DensePartition(chunk, kMax, P);
      INFO("chunk=" << chunk << " P=" << P);
      REQUIRE(p < P);
      REQUIRE(DensePartitionRange(kMax, P, p).Contains(chunk));
    }
    CHECK(DensePartition(kMax - 1, kMax, P) == P - 1);
  }
}

TEST_CASE("a partition offset rotates dense ranges: each chunk still has exactly one owner",
          "[partitioning]") {
  for (uint32_t P : {1u, 3u, 16u}) {
    for (uint64_t n : {1ull, 2ull, 5ull, 16ull, 37ull}) {
      for (uint32_t offset : {0u, 1u, 7u, 15u, 40u}) {
        std::vector<int> owners(n, 0);
        for (uint32_t p = 0; p < P; ++p) {
          const KeyRange r = DensePartitionRange(n, P, p, offset);
          const KeyRange unrotated = DensePartitionRange(n, P, (p + P - offset % P) % P);
          CHECK(r.begin == unrotated.begin);
          CHECK(r.end == unrotated.end);
          for (Key c = r.begin; c < r.end; ++c) {
            ++owners[c];
            REQUIRE(DensePartition(c, n, P, offset) == p);
          }
        }
        for (int o : owners) REQUIRE(o == 1);
      }
    }
  }
}

TEST_CASE("small dense tables spread over partitions by their names' hash",
          "[partitioning]") {
  // 64 one-chunk tables over 16 partitions: at offset 0 every one would be in
  // partition 15.
  std::vector<int> per_partition(16, 0);
  for (int i = 0; i < 64; ++i) {
    const uint32_t offset = DensePartitionOffset("layer" + std::to_string(i) + ".bias", 16);
    REQUIRE(offset < 16);
    ++per_partition[DensePartition(0, 1, 16, offset)];
  }
  int used = 0, most = 0;
  for (int c : per_partition) {
    used += c > 0;
    most = std::max(most, c);
  }
  CHECK(used >= 12);
  CHECK(most <= 10);
  // Pinned: a checkpoint records the offset, but a new job computes it.
  CHECK(DensePartitionOffset("mlp.fc0.bias", 16) == DensePartitionOffset("mlp.fc0.bias", 16));
  CHECK(DensePartitionOffset("", 7) == Xxh64("", 0) % 7);
}

TEST_CASE("sparse partition is total and in range for keys at the ends of uint64",
          "[partitioning][B05]") {
  const std::vector<uint64_t> keys = {0, 1, uint64_t{1} << 63, kMax - 1, kMax};
  for (uint32_t P : kPartitionCounts) {
    for (uint64_t key : keys) {
      INFO("key=" << key << " P=" << P);
      const uint32_t p = SparsePartition(key, P);
      REQUIRE(p < P);
      REQUIRE(p == ReferenceXxh64(key) % P);
    }
  }
  CHECK(SparsePartition(kMax, 1) == 0);
  CHECK(SparsePartition(kMax, 0xFFFFFFFFu) == ReferenceXxh64(kMax) % 0xFFFFFFFFu);
}

TEST_CASE("sparse placement is pinned: a hash change would move every checkpoint",
          "[partitioning]") {
  // XXH64(key as 8 LE bytes, seed 0), recorded once; they must never change.
  CHECK(ReferenceXxh64(0) == 0x34c96acdcadb1bbbULL);
  CHECK(ReferenceXxh64(1) == 0x9f29cb17a2a49995ULL);
  CHECK(ReferenceXxh64(uint64_t{1} << 63) == 0x3f425eacf01544e0ULL);
  CHECK(ReferenceXxh64(kMax - 1) == 0xbab3b83cf164d97fULL);
  CHECK(ReferenceXxh64(kMax) == 0x85d136adb773c6c9ULL);

  CHECK(SparsePartition(0, 64) == 59);
  CHECK(SparsePartition(1, 64) == 21);
  CHECK(SparsePartition(uint64_t{1} << 63, 64) == 32);
  CHECK(SparsePartition(kMax - 1, 64) == 63);
  CHECK(SparsePartition(kMax, 64) == 9);
  CHECK(SparsePartition(0, 7) == 3);
  CHECK(SparsePartition(1, 7) == 4);
  CHECK(SparsePartition(uint64_t{1} << 63, 7) == 5);
  CHECK(SparsePartition(kMax - 1, 7) == 6);
  CHECK(SparsePartition(kMax, 7) == 0);
  CHECK(SparsePartition(42, 3) == 0);
  CHECK(SparsePartition(kMax, 2) == 1);
}

TEST_CASE("NumChunks rounds up and keeps a short last chunk", "[partitioning]") {
  CHECK(NumChunks(0, 16384) == 0);
  CHECK(NumChunks(1, 16384) == 1);
  CHECK(NumChunks(16384, 16384) == 1);
  CHECK(NumChunks(16385, 16384) == 2);
  CHECK(NumChunks(784 * 256, 16384) == 13);  // 200704 = 12 * 16384 + 4096
}

}  // namespace cairn

namespace cairn {
namespace {

TEST_CASE("DenseNumElements: the product of the dims, 0 for an empty or non-positive shape",
          "[partitioning]") {
  v1::TableSpec t;
  CHECK(DenseNumElements(t) == 0);  // no shape: no elements (not 1)
  t.add_shape(784);
  CHECK(DenseNumElements(t) == 784);
  t.add_shape(256);
  CHECK(DenseNumElements(t) == 784 * 256);
  t.add_shape(0);
  CHECK(DenseNumElements(t) == 0);
  t.set_shape(2, -3);
  CHECK(DenseNumElements(t) == 0);
}

}  // namespace
}  // namespace cairn
