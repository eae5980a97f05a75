// The vector clock of one server: each live worker's clock (iterations
// completed), and the minimum over live workers that staleness waits use.
//
// A pull at iteration t of a table with staleness bound s may be served once
// MinClock() >= t - s (BSP: s = 0; ASP: never waits). Workers that left
// cleanly or were declared dead by the coordinator no longer count; a worker
// joining late starts at the clock the coordinator gave it (the minimum of
// the others, and at least this server's own minimum), so it neither holds
// others back nor gets ahead of the bound.
//
// Not thread-safe; guarded by the owning Shard's mutex.
#ifndef CAIRN_SERVER_SHARD_CLOCK_TRACKER_H_
#define CAIRN_SERVER_SHARD_CLOCK_TRACKER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <vector>

namespace cairn {

class ClockTracker {
 public:
  static constexpr int64_t kNoWorkers = std::numeric_limits<int64_t>::max();

  struct LiveWorker {
    uint32_t id;
    int64_t start_clock;
  };

  // Replaces the live set. A worker entering the set starts at the largest of
  // its start_clock, the clock it last reported (if it was live before), and
  // the current MinClock() (when some worker is live), so a late joiner
  // starts at the current minimum and the minimum never goes back; workers
  // that left stay out. A worker missing from `workers` (declared dead) no
  // longer counts.
  void SetLiveWorkers(const std::vector<LiveWorker>& workers);

  // Records that `worker` completed `clock` iterations (clocks never go back).
  // Returns false when the worker is not live (unknown, dead or left).
  bool Tick(uint32_t worker, int64_t clock);

  // The worker leaves for good (clean exit).
  void Leave(uint32_t worker);

  bool IsLive(uint32_t worker) const { return clocks_.count(worker) > 0; }
  // True when `worker` was live here once and no longer is: the map stopped
  // listing it (declared dead) or it left.
  bool Dropped(uint32_t worker) const {
    return clocks_.count(worker) == 0 && (last_.count(worker) > 0 || left_.count(worker) > 0);
  }
  int64_t ClockOf(uint32_t worker) const;

  // min over live workers; kNoWorkers when there are none.
  int64_t MinClock() const;
  int64_t MaxClock() const;
  // A live worker at MinClock() (the one a waiter waits for); -1 if none.
  int64_t SlowestWorker() const;
  size_t NumLive() const { return clocks_.size(); }
  std::vector<uint32_t> LiveIds() const;

 private:
  std::map<uint32_t, int64_t> clocks_;  // live worker -> clock
  std::set<uint32_t> left_;             // never re-added
  std::map<uint32_t, int64_t> last_;    // last known clock of any worker ever seen
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_CLOCK_TRACKER_H_
