// Which rows of a sparse table go when it holds more than its capacity
// (TableSpec.capacity_rows, field case B24), until the table is back at
// `evict_to` of its capacity:
// - LRU (the default): the least recently pushed. Recency is a per-table
//   count of row updates (the push that last updated a row), so the order
//   is exact and the same on every run of the same pushes; ties, which only
//   rows imported together can have, go by key.
// - LFU (TableSpec.eviction): the rows with the fewest updates over their
//   life (the row's update count, kept in checkpoints and the cold tier),
//   ties by the least recent, then by key. Rows pushed once go before rows
//   pushed often, so a stream of ids seen once never pushes out the hot
//   ones; the price is LFU's usual one: a row that was hot long ago stays
//   while its count leads.
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
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"

namespace cairn {

// Thread-compatible (immutable).
class RowEviction {
 public:
  // `capacity_rows` 0: no bound. `evict_to` in (0, 1]: the share of the
  // capacity an eviction pass brings the table back to.
  RowEviction(uint64_t capacity_rows, double evict_to,
              v1::EvictionPolicy policy = v1::EVICTION_POLICY_LRU);

  bool enabled() const { return capacity_ > 0; }
  // True when a table of `rows` rows must evict now.
  bool Over(uint64_t rows) const { return capacity_ > 0 && rows > capacity_; }
  // Rows an eviction pass leaves (at least 1).
  uint64_t Target() const { return target_; }

  // The rows to evict from a table whose row i was last updated at tick
  // `last_update[i]`, was updated `updates[i]` times and has key `keys[i]`:
  // the rows.size() - Target() first in the policy's order, in descending
  // row order (so each can be removed by moving the last row into its
  // place). Empty when not Over(). The spans have one entry per row.
  std::vector<uint32_t> Victims(absl::Span<const uint64_t> last_update,
                                absl::Span<const int64_t> updates,
                                absl::Span<const Key> keys) const;

  // The waiting ids to drop when ids `keys[i]` wait with `counts[i]`
  // pushes counted: the keys.size() - Target() with the fewest counts, ties
  // by the smaller key, in ascending key order. Empty when not Over().
  std::vector<Key> PendingVictims(absl::Span<const Key> keys,
                                  absl::Span<const uint32_t> counts) const;

 private:
  const uint64_t capacity_;
  const uint64_t target_;
  const v1::EvictionPolicy policy_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_ROW_EVICTION_H_
