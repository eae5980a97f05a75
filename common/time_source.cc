#include "common/time_source.h"

#include "absl/time/clock.h"

namespace cairn {

absl::Time RealTimeSource::Now() { return absl::Now(); }

}  // namespace cairn
