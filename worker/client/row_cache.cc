#include "worker/client/row_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace cairn {

Freshness Freshness::For(const v1::TableSpec& spec, int64_t clock) {
  constexpr int64_t kAny = std::numeric_limits<int64_t>::min();
  if (spec.consistency() == v1::CONSISTENCY_SSP) return Freshness{clock - spec.staleness(), kAny};
  return Freshness{clock, kAny};  // BSP: s = 0
}

bool Cacheable(const v1::TableSpec& spec) { return spec.consistency() != v1::CONSISTENCY_ASP; }

RowCache::RowCache(uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

size_t RowCache::Lookup(uint32_t table, absl::Span<const Key> keys, const Freshness& need,
                        absl::Span<float* const> out, absl::Span<const uint32_t> floats_per_key,
                        std::vector<bool>* hit, int64_t* oldest_min_clock) {
  hit->assign(keys.size(), false);
  if (!enabled()) return 0;
  size_t hits = 0;
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = entries_.find(EntryKey{table, keys[i]});
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    if (e.min_clock < need.min_clock || e.fetch_clock < need.fetch_clock ||
        e.values.size() != floats_per_key[i]) {
      continue;
    }
    std::memcpy(out[i], e.values.data(), e.values.size() * sizeof(float));
    lru_.splice(lru_.begin(), lru_, e.lru);
    (*hit)[i] = true;
    *oldest_min_clock = std::min(*oldest_min_clock, e.min_clock);
    ++hits;
  }
  return hits;
}

uint64_t RowCache::Generation(uint32_t table) const {
  absl::MutexLock lock(&mu_);
  auto it = generation_.find(table);
  return it == generation_.end() ? 0 : it->second;
}

size_t RowCache::Insert(uint32_t table, Key key, absl::Span<const float> values,
                        int64_t min_clock, int64_t fetch_clock, uint64_t generation) {
  const uint64_t cost = Cost(values.size());
  if (!enabled() || cost > capacity_bytes_) return 0;
  absl::MutexLock lock(&mu_);
  auto gen = generation_.find(table);
  if ((gen == generation_.end() ? 0 : gen->second) != generation) return 0;
  const EntryKey id{table, key};
  if (auto old = entries_.find(id); old != entries_.end()) {
    // Keep the fresher of the two (pulls of one key may complete out of order).
    if (old->second.min_clock > min_clock ||
        (old->second.min_clock == min_clock && old->second.fetch_clock > fetch_clock)) {
      return 0;
    }
    EraseLocked(old);
  }
  size_t evicted = 0;
  while (bytes_ + cost > capacity_bytes_ && !lru_.empty()) {
    EraseLocked(entries_.find(lru_.back()));
    ++evicted;
  }
  evictions_ += evicted;
  lru_.push_front(id);
  Entry& e = entries_[id];
  e.values.assign(values.begin(), values.end());
  e.min_clock = min_clock;
  e.fetch_clock = fetch_clock;
  e.lru = lru_.begin();
  bytes_ += cost;
  return evicted;
}

void RowCache::Invalidate(uint32_t table, absl::Span<const Key> keys) {
  if (!enabled()) return;
  absl::MutexLock lock(&mu_);
  ++generation_[table];
  if (entries_.empty()) return;  // a worker that only pushes: no lookups
  for (Key k : keys) {
    auto it = entries_.find(EntryKey{table, k});
    if (it != entries_.end()) EraseLocked(it);
  }
}

void RowCache::EraseLocked(absl::flat_hash_map<EntryKey, Entry>::iterator it) {
  bytes_ -= Cost(it->second.values.size());
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

size_t RowCache::num_entries() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

uint64_t RowCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

uint64_t RowCache::evictions() const {
  absl::MutexLock lock(&mu_);
  return evictions_;
}

}  // namespace cairn
