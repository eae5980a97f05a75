// At-most-once application of pushes: remembers which sequence numbers of one
// worker were applied. The client numbers its requests to each server
// 1, 2, 3, ... so the window stays small: everything below floor() is
// applied, and only out-of-order arrivals above it are kept.
//
// Not thread-safe; guarded by the owning Shard's mutex.
#ifndef CAIRN_SERVER_SHARD_SEQUENCE_WINDOW_H_
#define CAIRN_SERVER_SHARD_SEQUENCE_WINDOW_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace cairn {

class SequenceWindow {
 public:
  // Most sequences held above the floor; past it the floor jumps to the
  // smallest held sequence (a gap that old is a request that never came).
  static constexpr size_t kMaxHeld = 4096;

  bool Contains(uint64_t seq) const { return seq < floor_ || held_.count(seq) > 0; }

  // Records `seq` as applied. Returns false if it already was.
  bool Insert(uint64_t seq) {
    if (Contains(seq)) return false;
    held_.insert(seq);
    while (held_.erase(floor_) > 0) ++floor_;
    if (held_.size() > kMaxHeld) {
      uint64_t lowest = UINT64_MAX;
      for (uint64_t s : held_) lowest = s < lowest ? s : lowest;
      floor_ = lowest;
      while (held_.erase(floor_) > 0) ++floor_;
    }
    return true;
  }

  uint64_t floor() const { return floor_; }
  const absl::flat_hash_set<uint64_t>& held() const { return held_; }

  // A window as another replica recorded it (state transfer).
  static SequenceWindow FromParts(uint64_t floor, const std::vector<uint64_t>& held) {
    SequenceWindow w;
    w.floor_ = floor;
    w.held_.insert(held.begin(), held.end());
    return w;
  }

 private:
  uint64_t floor_ = 1;  // sequences start at 1; 0 is never valid
  absl::flat_hash_set<uint64_t> held_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_SEQUENCE_WINDOW_H_
