// Which rows of a sparse table go when it holds more than its capacity
// (TableSpec.capacity_rows, field case B24): the least recently pushed,
// until the table is back at `evict_to` of its capacity. Recency is a
// per-table count of row updates (the push that last updated a row), so the
// order is exact and the same on every run of the same pushes; ties, which
// only rows imported together can have, go by key.
//
// Each server evicts on its own: under SSP or ASP a primary and its backup
// may apply concurrent pushes in different orders and so evict different
// rows. An evicted row is gone (a later pull reads the initializer's
// values, a later push starts it again, through admission when the table
// has a min_count), so a failover can only bring back rows the job would
// have re-created anyway.
//
// Ids waiting for admission (TableSpec.min_count) are bounded the same way:
// a table with a capacity keeps at most capacity_rows of them, and when
// more wait, those with the fewest pushes counted go first (ties by key),
// down to evict_to of the capacity. A dropped id starts counting again at
// its next push. Without a capacity neither rows nor waiting ids are
// bounded.
#ifndef CAIRN_SERVER_SHARD_ROW_EVICTION_H_
#define CAIRN_SERVER_SHARD_ROW_EVICTION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/bytes.h"

namespace cairn {

// Thread-compatible (immutable).
class RowEviction {
 public:
  // `capacity_rows` 0: no bound. `evict_to` in (0, 1]: the share of the
  // capacity an eviction pass brings the table back to.
  RowEviction(uint64_t capacity_rows, double evict_to);

  bool enabled() const { return capacity_ > 0; }
  // True when a table of `rows` rows must evict now.
  bool Over(uint64_t rows) const { return capacity_ > 0 && rows > capacity_; }
  // Rows an eviction pass leaves (at least 1).
  uint64_t Target() const { return target_; }

  // The rows to evict from a table whose row i was last updated at tick
  // `last_update[i]` and has key `keys[i]`: the rows.size() - Target()
  // least recent ones, in descending row order (so each can be removed by
  // moving the last row into its place). Empty when not Over().
  std::vector<uint32_t> Victims(absl::Span<const uint64_t> last_update,
                                absl::Span<const Key> keys) const;

  // The waiting ids to drop when ids `keys[i]` wait with `counts[i]`
  // pushes counted: the keys.size() - Target() with the fewest counts, ties
  // by the smaller key, in ascending key order. Empty when not Over().
  std::vector<Key> PendingVictims(absl::Span<const Key> keys,
                                  absl::Span<const uint32_t> counts) const;

 private:
  const uint64_t capacity_;
  const uint64_t target_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_ROW_EVICTION_H_
