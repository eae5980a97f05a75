// Time behind an interface, so code that reasons about deadlines and leases
// (the coordinator's lease table, staleness waits) can be tested with a fake
// clock (tests/fakes/fake_time_source.h) instead of sleeping.
//
// Two clocks, never to be mixed:
// - monotonic (MonotonicNow, MonotonicTimeSource): never steps; for every
//   lease, timeout and deadline a process computes for itself. Its instants
//   count from an arbitrary origin (the machine's boot): compare and subtract
//   them, never print them as dates or send them to another process.
// - wall (absl::Now, RealTimeSource): steps when NTP or a VM resume sets the
//   clock, forwards or back; only for what a person reads (log dates,
//   checkpoint dates) and for gRPC deadlines, which gRPC turns into its own
//   monotonic timers at once.
#ifndef CAIRN_COMMON_TIME_SOURCE_H_
#define CAIRN_COMMON_TIME_SOURCE_H_

#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cairn {

// The monotonic clock (CLOCK_MONOTONIC through std::chrono::steady_clock) as
// an absl::Time: absl::UnixEpoch() plus the time since the clock's origin.
// Thread-safe. Successive calls never go backwards.
absl::Time MonotonicNow();

// Sleeps `d` on the monotonic clock, in steps of at most `step`, returning
// early (false) once `stop()` is true; true when the whole of `d` passed.
// absl's timed waits take wall-clock deadlines (a step of the wall clock
// lengthens or cuts them short), so loops that time leases sleep with this.
template <typename StopFn>
bool SleepMonotonic(absl::Duration d, StopFn stop,
                    absl::Duration step = absl::Milliseconds(20)) {
  const absl::Time until = MonotonicNow() + d;
  for (absl::Time now = MonotonicNow(); now < until; now = MonotonicNow()) {
    if (stop()) return false;
    absl::SleepFor(std::min(step, until - now));
  }
  return !stop();
}

// A source of the current time. Implementations are thread-safe.
class TimeSource {
 public:
  virtual ~TimeSource() = default;

  // The current time.
  virtual absl::Time Now() = 0;
};

// The wall clock, absl::Now(): may step forwards or back. Thread-safe.
class RealTimeSource : public TimeSource {
 public:
  absl::Time Now() override;
};

// MonotonicNow(): never goes backwards; for leases. Thread-safe.
class MonotonicTimeSource : public TimeSource {
 public:
  absl::Time Now() override;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_TIME_SOURCE_H_
