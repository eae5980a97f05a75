// When to poll again for an event that comes at a steady pace, after the
// busy-poll window (rpc.busy_poll, common/busy_poll.h) has passed without it.
//
// A thread that polls for a window after each event and then sleeps misses,
// by sleeping, every event that comes later than the window. A server whose
// workers compute for longer than that between pushes sleeps through every
// push, so each one goes through gRPC instead of its call slot and both
// sides are woken by the kernel; a worker whose push takes the server longer
// than the window to apply looks at its slot only once a millisecond after
// it (with a 23 MB model on 2 CPUs, about 1 ms of a step: docs/benchmarks.md,
// "Polling again when the next call is due"). Such waits repeat: the next
// lasts about as long as the last few. This learns their length, and the
// thread sleeps through the part of a wait it can predict and polls again
// for a window on either side of when the event is due, as the Linux block
// layer's hybrid polling sleeps for part of a request's expected time
// before it polls for its completion (blk-mq, queue/io_poll_delay).
//
// The span is the middle half of the last kHistory waits that outlasted the
// window (the middle: an unrelated event in the middle of a wait, or a long
// pause, does not move it), widened by a window on either side, and at most
// a quarter of the wait or four windows long; none for waits of kMaxWait or
// more, where the wake-up is under 1% of the wait. Waits within the window
// are caught by the window itself and do not count. Thread-safe.
#ifndef CAIRN_COMMON_POLL_AHEAD_H_
#define CAIRN_COMMON_POLL_AHEAD_H_

#include <array>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

class PollAhead {
 public:
  // How many of the last waits longer than the window the estimate reads.
  static constexpr int kHistory = 8;
  // Waits at least this long are not polled for again.
  static constexpr absl::Duration kMaxWait = absl::Milliseconds(100);

  // When to poll again in a wait: from `from` (which may already have
  // passed: poll at once) until `until`.
  struct Span {
    absl::Time from;
    absl::Time until;
  };

  // `window`: how long the thread polls at the start of each wait
  // (rpc.busy_poll); zero or less: Again() never answers.
  explicit PollAhead(absl::Duration window);

  // A wait that lasted `waited`: from the end of the event before it (a
  // server) or from the post (a worker) to the event.
  void Record(absl::Duration waited) ABSL_LOCKS_EXCLUDED(mu_);

  // For a wait begun at `start` whose window has passed without its event:
  // the span from a window before the shortest of the middle half of the
  // recent waits to a window after the longest, counted from `start`;
  // nullopt when no recent wait outlasted the window, or that shortest one
  // lasted kMaxWait or more (sleep until the event, as without this).
  std::optional<Span> Again(absl::Time start) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const absl::Duration window_;
  mutable absl::Mutex mu_;
  // The last waits longer than the window (a ring; zero: no wait yet).
  std::array<absl::Duration, kHistory> long_waits_ ABSL_GUARDED_BY(mu_){};
  int next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_POLL_AHEAD_H_
