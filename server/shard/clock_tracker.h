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
// Each worker id has incarnations (Member.incarnation: the coordinator counts
// its registrations). A map listing a newer incarnation of an id replaces the
// old one: the new process enters as a late joiner would, and a worker that
// left (or was declared dead) may come back under its id as a new
// incarnation. Requests of an older incarnation are the Shard's to refuse.
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
    uint64_t incarnation = 0;
  };

  // Replaces the live set. A worker entering the set starts at the largest of
  // its start_clock, the clock it last reported (if it was live before), and
  // the current MinClock() (when some worker is live), so a late joiner
  // starts at the current minimum and the minimum never goes back; workers
  // that left stay out unless listed with a newer incarnation. A worker
  // missing from `workers` (declared dead) no longer counts.
  void SetLiveWorkers(const std::vector<LiveWorker>& workers);

  // Records that `worker` completed `clock` iterations (clocks never go back).
  // Returns false when the worker is not live (unknown, dead or left).
  bool Tick(uint32_t worker, int64_t clock);

  // The worker's current incarnation leaves for good (clean exit); a newer
  // incarnation may enter later.
  void Leave(uint32_t worker);

  bool IsLive(uint32_t worker) const { return clocks_.count(worker) > 0; }
  // The newest incarnation of `worker` a map listed; 0 when none did.
  uint64_t IncarnationOf(uint32_t worker) const {
    auto it = incarnations_.find(worker);
    return it == incarnations_.end() ? 0 : it->second;
  }
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
  // True when `worker` is live at `clock` and every other live worker is
  // past it: the worker's tick to clock + 1 raises MinClock() past `clock`.
  bool LastAt(uint32_t worker, int64_t clock) const;
  size_t NumLive() const { return clocks_.size(); }
  std::vector<uint32_t> LiveIds() const;

 private:
  std::map<uint32_t, int64_t> clocks_;  // live worker -> clock
  std::map<uint32_t, uint64_t> left_;   // worker -> incarnation that left (never re-added)
  std::map<uint32_t, int64_t> last_;    // last known clock of any worker ever seen
  std::map<uint32_t, uint64_t> incarnations_;  // newest incarnation listed per worker
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_CLOCK_TRACKER_H_
