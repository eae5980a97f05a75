#include "server/shard/row_eviction.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace cairn {

RowEviction::RowEviction(uint64_t capacity_rows, double evict_to)
    : capacity_(capacity_rows),
      target_(std::max<uint64_t>(
          1, static_cast<uint64_t>(std::floor(static_cast<double>(capacity_rows) *
                                              std::clamp(evict_to, 0.0, 1.0))))) {}

std::vector<uint32_t> RowEviction::Victims(absl::Span<const uint64_t> last_update,
                                           absl::Span<const Key> keys) const {
  const uint64_t rows = last_update.size();
  if (!Over(rows)) return {};
  const uint64_t evict = rows - std::min(rows, target_);
  std::vector<uint32_t> order(rows);
  for (uint32_t i = 0; i < rows; ++i) order[i] = i;
  auto older = [&](uint32_t a, uint32_t b) {
    return last_update[a] != last_update[b] ? last_update[a] < last_update[b] : keys[a] < keys[b];
  };
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(evict), order.end(),
                   older);
  order.resize(evict);
  std::sort(order.begin(), order.end(), std::greater<uint32_t>());
  return order;
}

std::vector<Key> RowEviction::PendingVictims(absl::Span<const Key> keys,
                                            absl::Span<const uint32_t> counts) const {
  const uint64_t waiting = keys.size();
  if (!Over(waiting)) return {};
  const uint64_t drop = waiting - std::min(waiting, target_);
  std::vector<uint32_t> order(waiting);
  for (uint32_t i = 0; i < waiting; ++i) order[i] = i;
  auto fewer = [&](uint32_t a, uint32_t b) {
    return counts[a] != counts[b] ? counts[a] < counts[b] : keys[a] < keys[b];
  };
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(drop), order.end(),
                   fewer);
  std::vector<Key> victims;
  victims.reserve(drop);
  for (uint64_t i = 0; i < drop; ++i) victims.push_back(keys[order[i]]);
  std::sort(victims.begin(), victims.end());
  return victims;
}

}  // namespace cairn
