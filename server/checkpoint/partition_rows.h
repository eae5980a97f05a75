// One partition's rows of one table as plain data: what a checkpoint stores
// and a restore loads (Table::ExportPartition / ImportPartition).
#ifndef CAIRN_SERVER_CHECKPOINT_PARTITION_ROWS_H_
#define CAIRN_SERVER_CHECKPOINT_PARTITION_ROWS_H_

#include <cstdint>
#include <vector>

#include "common/bytes.h"

namespace cairn {

// Rows in ascending key order. Row i has lengths[i] floats of value at
// values[sum(lengths[0..i))] and slots_per_element * lengths[i] floats of
// optimizer slots at slots[S * sum(lengths[0..i))], slot-major within the row
// (optimizer.h); steps[i] is the row's update count (Adam's bias correction).
struct PartitionRows {
  int slots_per_element = 0;
  std::vector<Key> keys;
  std::vector<uint32_t> lengths;
  std::vector<int64_t> steps;
  std::vector<float> values;
  std::vector<float> slots;
  // Sparse tables with admission (TableSpec.min_count): ids seen but not yet
  // given a row, ascending, and how many pushes each has had.
  std::vector<Key> pending_keys;
  std::vector<uint32_t> pending_counts;

  bool operator==(const PartitionRows&) const = default;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_CHECKPOINT_PARTITION_ROWS_H_
