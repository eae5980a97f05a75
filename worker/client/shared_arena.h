// Space in a worker's shared region (common/shared_region.h) for the values
// of requests in flight: first fit over a list of free blocks, merged when
// freed, lowest offsets first so that a job touches as few pages as its
// requests in flight need.
//
// A request that failed may still be read or written by the server (a
// timed-out call's handler can run late), so its block is never reused:
// Quarantine() keeps it out of the free list for good. The channel opens a
// fresh region when too much of one is quarantined.
#ifndef CAIRN_WORKER_CLIENT_SHARED_ARENA_H_
#define CAIRN_WORKER_CLIENT_SHARED_ARENA_H_

#include <cstdint>
#include <map>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace cairn {

// Thread-safe.
class SharedArena {
 public:
  // Blocks start at multiples of kAlign bytes (a cache line).
  static constexpr uint64_t kAlign = 64;

  // Space [begin, end) of a region.
  SharedArena(uint64_t begin, uint64_t end);

  // The offset of a block of `bytes` (> 0), or nullopt when no free block
  // is large enough.
  std::optional<uint64_t> Allocate(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns the block at `offset` (from Allocate) to the free list.
  void Free(uint64_t offset) ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps the block at `offset` out of use for the arena's life.
  void Quarantine(uint64_t offset) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t capacity() const { return end_ - begin_; }
  uint64_t allocated_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t quarantined_bytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const uint64_t begin_;
  const uint64_t end_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);  // offset -> bytes
  std::map<uint64_t, uint64_t> used_ ABSL_GUARDED_BY(mu_);  // offset -> bytes
  uint64_t allocated_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t quarantined_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_SHARED_ARENA_H_
