#include "common/poll_ahead.h"

#include <algorithm>

namespace cairn {

PollAhead::PollAhead(absl::Duration window) : window_(window) {}

void PollAhead::Record(absl::Duration waited) {
  if (window_ <= absl::ZeroDuration() || waited <= window_) return;
  absl::MutexLock lock(&mu_);
  long_waits_[next_] = waited;
  next_ = (next_ + 1) % kHistory;
}

std::optional<PollAhead::Span> PollAhead::Again(absl::Time start) const {
  if (window_ <= absl::ZeroDuration()) return std::nullopt;
  std::array<absl::Duration, kHistory> waits;
  size_t n = 0;
  {
    absl::MutexLock lock(&mu_);
    for (absl::Duration w : long_waits_) {
      if (w > absl::ZeroDuration()) waits[n++] = w;
    }
  }
  if (n == 0) return std::nullopt;
  // Only the two order statistics used below, not a whole sort (which
  // GCC 12 flags, wrongly, as reading past the array).
  const size_t trim = n / 4;
  const size_t last = n - 1 - trim;
  std::nth_element(waits.begin(), waits.begin() + trim, waits.begin() + n);
  if (last > trim) {  // among those after waits[trim], which stays
    std::nth_element(waits.begin() + trim + 1, waits.begin() + last, waits.begin() + n);
  }
  // The span covers the middle half of the recent waits (the shortest and
  // the longest quarter left out: waits cut short by an unrelated event, a
  // lease renewal answered between two pushes, or long pauses), and a
  // window on either side.
  const absl::Duration earliest = waits[trim];
  const absl::Duration latest = waits[last];
  if (earliest >= kMaxWait) return std::nullopt;
  // At most a quarter of the wait (or four windows) is polled again.
  const absl::Duration most = std::max(4 * window_, earliest / 4);
  const absl::Duration from = earliest - window_;
  const absl::Duration until = std::min(latest + window_, from + most);
  return Span{start + from, start + until};
}

}  // namespace cairn
