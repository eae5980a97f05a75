// Which of the job's P virtual partitions a key of a table belongs to.
//
// Dense tables: chunk keys [0, num_chunks) are cut into P contiguous, half-open
// key ranges; partition p owns [p * num_chunks / P, (p + 1) * num_chunks / P)
// computed exactly (in 128-bit arithmetic where the products do not fit in
// 64 bits), so the ranges cover every chunk exactly once (when
// num_chunks < P some partitions own no chunk). A table's
// `partition_offset` (TableSpec) rotates these ranges: partition p owns the
// range of partition (p - offset) mod P. Configs set it from a hash of the
// table's name, so a model's small tables (one chunk each, which would all
// fall in partition P - 1) spread over the partitions and their servers.
// Sparse tables: partition = XXH64(key as 8 little-endian bytes, seed 0) mod P.
// XXH64 is a fixed, documented hash: placement never changes between builds,
// so a checkpoint restores onto any build and any number of servers.
//
// Immutable after construction; safe to share.
#ifndef CAIRN_COMMON_PARTITIONING_H_
#define CAIRN_COMMON_PARTITIONING_H_

#include <cstdint>
#include <string>

#include "common/bytes.h"

namespace cairn {

namespace v1 {
class TableSpec;
}  // namespace v1

// Half-open [begin, end) of keys.
struct KeyRange {
  Key begin = 0;
  Key end = 0;
  uint64_t size() const { return end - begin; }
  bool Contains(Key k) const { return k >= begin && k < end; }
};

// Partition of sparse key `key` among `num_partitions` (> 0).
uint32_t SparsePartition(Key key, uint32_t num_partitions);

// Chunk range of partition `partition` of a dense table with `num_chunks`
// chunks whose ranges are rotated by `offset` partitions.
KeyRange DensePartitionRange(uint64_t num_chunks, uint32_t num_partitions,
                             uint32_t partition, uint32_t offset = 0);

// Partition owning dense chunk `chunk` (< num_chunks).
uint32_t DensePartition(uint64_t chunk, uint64_t num_chunks, uint32_t num_partitions,
                        uint32_t offset = 0);

// The rotation a config gives a dense table: XXH64 of its name mod P. Stable
// across builds (a checkpoint records it, docs/checkpoint-format.md).
uint32_t DensePartitionOffset(const std::string& table_name, uint32_t num_partitions);

// Element count of a dense table's shape: the product of its dims; 0 for an
// empty shape or one with a dim <= 0 (a table the config refuses). Every
// count of a dense table's floats goes through this function.
uint64_t DenseNumElements(const v1::TableSpec& spec);

// Number of chunks of a dense table of `num_elements` floats cut in chunks of
// `chunk_size` floats (the last chunk may be shorter).
inline uint64_t NumChunks(uint64_t num_elements, uint64_t chunk_size) {
  return (num_elements + chunk_size - 1) / chunk_size;
}

}  // namespace cairn

#endif  // CAIRN_COMMON_PARTITIONING_H_
