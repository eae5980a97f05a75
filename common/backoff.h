// Exponential backoff between the attempts of a retried call: every retry in
// Cairn (a push or pull to a shard, a call to the coordinator, a checkpoint
// report) waits through one of these, so the policy is written once.
//
// No jitter: the callers are a handful of members of one job, not a crowd;
// their retries are already spread by the failures that cause them.
// Immutable; safe to share.
#ifndef CAIRN_COMMON_BACKOFF_H_
#define CAIRN_COMMON_BACKOFF_H_

#include <algorithm>

#include "absl/time/time.h"

namespace cairn {

class Backoff {
 public:
  // First wait `initial`, doubling per attempt up to `cap` (both > 0).
  constexpr Backoff(absl::Duration initial, absl::Duration cap) : initial_(initial), cap_(cap) {}

  // The wait before retry `attempt` (0 = the first retry):
  // min(cap, initial * 2^attempt). Negative attempts count as 0.
  absl::Duration Delay(int attempt) const {
    absl::Duration d = initial_;
    for (int i = 0; i < attempt && d < cap_; ++i) d *= 2;
    return std::min(d, cap_);
  }

 private:
  absl::Duration initial_;
  absl::Duration cap_;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_BACKOFF_H_
