#include "worker/client/shared_arena.h"

#include <iterator>

namespace cairn {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

SharedArena::SharedArena(uint64_t begin, uint64_t end)
    : begin_(AlignUp(begin, kAlign)), end_(end > AlignUp(begin, kAlign) ? end : AlignUp(begin, kAlign)) {
  absl::MutexLock lock(&mu_);
  if (end_ > begin_) free_[begin_] = end_ - begin_;
}

std::optional<uint64_t> SharedArena::Allocate(uint64_t bytes) {
  if (bytes == 0) return std::nullopt;
  const uint64_t size = AlignUp(bytes, kAlign);
  absl::MutexLock lock(&mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first;
    const uint64_t left = it->second - size;
    free_.erase(it);
    if (left > 0) free_[offset + size] = left;
    used_[offset] = size;
    allocated_ += size;
    return offset;
  }
  return std::nullopt;
}

void SharedArena::Free(uint64_t offset) {
  absl::MutexLock lock(&mu_);
  auto used = used_.find(offset);
  if (used == used_.end()) return;
  uint64_t begin = offset;
  uint64_t size = used->second;
  allocated_ -= size;
  used_.erase(used);
  auto next = free_.lower_bound(begin);
  if (next != free_.end() && begin + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[begin] = size;
}

void SharedArena::Quarantine(uint64_t offset) {
  absl::MutexLock lock(&mu_);
  auto used = used_.find(offset);
  if (used == used_.end()) return;
  allocated_ -= used->second;
  quarantined_ += used->second;
  used_.erase(used);
}

uint64_t SharedArena::allocated_bytes() const {
  absl::MutexLock lock(&mu_);
  return allocated_;
}

uint64_t SharedArena::quarantined_bytes() const {
  absl::MutexLock lock(&mu_);
  return quarantined_;
}

}  // namespace cairn
