#include "common/partitioning.h"

// The library's XXH64, compiled into this file: a sparse key's partition is
// asked for once per key on both sides of every sparse push and pull, and
// an 8-byte input inlined costs a few multiplies where the call costs more.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cairn/v1/types.pb.h"
#include "common/hash.h"

namespace cairn {

uint64_t DenseNumElements(const v1::TableSpec& spec) {
  if (spec.shape_size() == 0) return 0;
  uint64_t n = 1;
  for (int64_t d : spec.shape()) n *= d > 0 ? static_cast<uint64_t>(d) : 0;
  return n;
}

uint32_t SparsePartition(Key key, uint32_t num_partitions) {
  const uint64_t h = XXH64(&key, sizeof(key), /*seed=*/0);  // = Xxh64(&key, 8)
  return static_cast<uint32_t>(h % num_partitions);
}

KeyRange DensePartitionRange(uint64_t num_chunks, uint32_t num_partitions,
                             uint32_t partition, uint32_t offset) {
  using u128 = unsigned __int128;
  offset %= num_partitions;
  partition = (partition + num_partitions - offset) % num_partitions;
  if (num_chunks <= UINT64_MAX / num_partitions) {
    // The products fit in 64 bits (any table below 2^48 chunks): the same
    // quotients, without a 128-bit division's library call.
    return KeyRange{num_chunks * partition / num_partitions,
                    num_chunks * (partition + 1) / num_partitions};
  }
  const Key begin = static_cast<Key>(u128(num_chunks) * partition / num_partitions);
  const Key end = static_cast<Key>(u128(num_chunks) * (partition + 1) / num_partitions);
  return KeyRange{begin, end};
}

uint32_t DensePartitionOffset(const std::string& table_name, uint32_t num_partitions) {
  return static_cast<uint32_t>(Xxh64(table_name.data(), table_name.size()) % num_partitions);
}

uint32_t DensePartition(uint64_t chunk, uint64_t num_chunks, uint32_t num_partitions,
                        uint32_t offset) {
  // Largest p with begin(p) <= chunk: begin(p) = floor(num_chunks * p / P).
  using u128 = unsigned __int128;
  uint64_t p = num_chunks <= UINT64_MAX / num_partitions
                   ? (chunk * num_partitions + num_partitions - 1) / num_chunks
                   : static_cast<uint64_t>((u128(chunk) * num_partitions + num_partitions - 1) /
                                           num_chunks);
  // p is the smallest p with num_chunks * p >= chunk * P ... adjust to the owner.
  while (p > 0 && DensePartitionRange(num_chunks, num_partitions, p).begin > chunk) --p;
  while (p + 1 < num_partitions &&
         DensePartitionRange(num_chunks, num_partitions, p).end <= chunk)
    ++p;
  return static_cast<uint32_t>((p + offset) % num_partitions);
}

}  // namespace cairn
