#include "server/shard/row_eviction.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace cairn {

RowEviction::RowEviction(uint64_t capacity_rows, double evict_to, v1::EvictionPolicy policy)
    : capacity_(capacity_rows),
      target_(std::max<uint64_t>(
          1, static_cast<uint64_t>(std::floor(static_cast<double>(capacity_rows) *
                                              std::clamp(evict_to, 0.0, 1.0))))),
      policy_(policy) {}

namespace {

// The indexes of the items.size() - target items with the lowest
// (score, key), in no particular order.
template <typename Score>
std::vector<uint32_t> Lowest(absl::Span<const Score> score, absl::Span<const Key> keys,
                             uint64_t target) {
  const uint64_t n = score.size();
  const uint64_t take = n - std::min(n, target);
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  auto lower = [&](uint32_t a, uint32_t b) {
    return score[a] != score[b] ? score[a] < score[b] : keys[a] < keys[b];
  };
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(take), order.end(),
                   lower);
  order.resize(take);
  return order;
}

}  // namespace

std::vector<uint32_t> RowEviction::Victims(absl::Span<const uint64_t> last_update,
                                           absl::Span<const int64_t> updates,
                                           absl::Span<const Key> keys) const {
  if (!Over(last_update.size())) return {};
  std::vector<uint32_t> victims;
  if (policy_ == v1::EVICTION_POLICY_LFU) {
    std::vector<std::pair<int64_t, uint64_t>> score(last_update.size());
    for (size_t i = 0; i < score.size(); ++i) score[i] = {updates[i], last_update[i]};
    victims = Lowest(absl::MakeConstSpan(score), keys, target_);
  } else {
    victims = Lowest(last_update, keys, target_);
  }
  std::sort(victims.begin(), victims.end(), std::greater<uint32_t>());
  return victims;
}

std::vector<Key> RowEviction::PendingVictims(absl::Span<const Key> keys,
                                            absl::Span<const uint32_t> counts) const {
  if (!Over(keys.size())) return {};
  std::vector<Key> victims;
  for (uint32_t i : Lowest(counts, keys, target_)) victims.push_back(keys[i]);
  std::sort(victims.begin(), victims.end());
  return victims;
}

}  // namespace cairn
