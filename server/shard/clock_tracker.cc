#include "server/shard/clock_tracker.h"

#include <algorithm>

namespace cairn {

void ClockTracker::SetLiveWorkers(const std::vector<LiveWorker>& workers) {
  const int64_t previous_min = MinClock();
  std::map<uint32_t, int64_t> next;
  for (const LiveWorker& w : workers) {
    if (auto left = left_.find(w.id); left != left_.end() && left->second >= w.incarnation) {
      continue;
    }
    auto known = incarnations_.find(w.id);
    if (known != incarnations_.end() && known->second > w.incarnation) continue;  // stale listing
    // A newer incarnation is a new process: it enters afresh, as a late
    // joiner, whatever its predecessor's clock was.
    const bool same = known != incarnations_.end() && known->second == w.incarnation;
    int64_t clock = w.start_clock;
    if (auto it = last_.find(w.id); same && it != last_.end()) clock = std::max(clock, it->second);
    // A worker entering the live set never pulls the minimum back: the
    // coordinator's start_clock comes from heartbeats and may lag.
    if ((!same || clocks_.count(w.id) == 0) && previous_min != kNoWorkers) {
      clock = std::max(clock, previous_min);
    }
    incarnations_[w.id] = w.incarnation;
    next[w.id] = clock;
    last_[w.id] = clock;
  }
  clocks_ = std::move(next);
}

bool ClockTracker::Tick(uint32_t worker, int64_t clock) {
  auto it = clocks_.find(worker);
  if (it == clocks_.end()) return false;
  it->second = std::max(it->second, clock);
  last_[worker] = it->second;
  return true;
}

void ClockTracker::Leave(uint32_t worker) {
  left_[worker] = IncarnationOf(worker);
  clocks_.erase(worker);
}

int64_t ClockTracker::ClockOf(uint32_t worker) const {
  auto it = clocks_.find(worker);
  if (it != clocks_.end()) return it->second;
  auto last = last_.find(worker);
  return last == last_.end() ? 0 : last->second;
}

int64_t ClockTracker::MinClock() const {
  int64_t m = kNoWorkers;
  for (const auto& [id, c] : clocks_) m = std::min(m, c);
  return m;
}

int64_t ClockTracker::MaxClock() const {
  int64_t m = 0;
  for (const auto& [id, c] : clocks_) m = std::max(m, c);
  return m;
}

int64_t ClockTracker::SlowestWorker() const {
  int64_t best = -1;
  int64_t m = kNoWorkers;
  for (const auto& [id, c] : clocks_) {
    if (c < m) {
      m = c;
      best = id;
    }
  }
  return best;
}

bool ClockTracker::LastAt(uint32_t worker, int64_t clock) const {
  auto own = clocks_.find(worker);
  if (own == clocks_.end() || own->second != clock) return false;
  for (const auto& [id, c] : clocks_) {
    if (id != worker && c <= clock) return false;
  }
  return true;
}

std::vector<uint32_t> ClockTracker::LiveIds() const {
  std::vector<uint32_t> ids;
  for (const auto& [id, c] : clocks_) ids.push_back(id);
  return ids;
}

}  // namespace cairn
