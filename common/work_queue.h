// A FIFO of work items handed from any thread to a background thread: the
// checkpoint writer's snapshots, a server's replica transfers, the client's
// completion callbacks.
//
// Thread-safe. Items are moved in and out; T must be movable.
#ifndef CAIRN_COMMON_WORK_QUEUE_H_
#define CAIRN_COMMON_WORK_QUEUE_H_

#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

template <typename T>
class WorkQueue {
 public:
  // At most `capacity` items wait; a push beyond them fails.
  explicit WorkQueue(size_t capacity = std::numeric_limits<size_t>::max())
      : capacity_(capacity) {}

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Appends `item`. False, and the item is dropped, when the queue is closed
  // or `capacity` items wait.
  bool Push(T item) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_ || items_.size() >= capacity_) return false;
    items_.push_back(std::move(item));
    return true;
  }

  // The oldest item, waiting for one. After Close it still hands out what was
  // queued before, then nullopt.
  std::optional<T> Pop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &WorkQueue::ReadyLocked));
    return TakeLocked();
  }

  // Pop waiting at most `timeout` (absl's timed wait, which ends at a
  // wall-clock deadline): nullopt also when none came.
  std::optional<T> PopFor(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &WorkQueue::ReadyLocked), timeout);
    return TakeLocked();
  }

  // Refuses pushes from now on and wakes every waiting Pop. Idempotent.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  // Drops every waiting item (a consumer that stops without finishing).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    items_.clear();
  }

  bool closed() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return closed_;
  }
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

 private:
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !items_.empty();
  }
  std::optional<T> TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (items_.empty()) return std::nullopt;
    std::optional<T> item(std::move(items_.front()));
    items_.pop_front();
    return item;
  }

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_WORK_QUEUE_H_
