// A TimeSource whose time moves only when a test says so.
#ifndef CAIRN_TESTS_FAKES_FAKE_TIME_SOURCE_H_
#define CAIRN_TESTS_FAKES_FAKE_TIME_SOURCE_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time_source.h"

namespace cairn {

// Thread-safe. Starts at `start` (by default 2030-01-01 00:00:00 UTC, a fixed
// instant so logged times are reproducible) and stands still until Advance().
class FakeTimeSource : public TimeSource {
 public:
  explicit FakeTimeSource(absl::Time start = absl::FromUnixSeconds(1893456000))
      : now_(start) {}

  absl::Time Now() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  // Moves the time forward by `delta` (>= 0; a negative delta is ignored,
  // since time never goes backwards).
  void Advance(absl::Duration delta) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (delta > absl::ZeroDuration()) now_ += delta;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_TESTS_FAKES_FAKE_TIME_SOURCE_H_
