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

}  // namespace cairn
