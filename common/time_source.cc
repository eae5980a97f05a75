#include "common/time_source.h"

#include <chrono>

#include "absl/time/clock.h"

namespace cairn {

absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

absl::Time RealTimeSource::Now() { return absl::Now(); }

absl::Time MonotonicTimeSource::Now() { return MonotonicNow(); }

}  // namespace cairn
