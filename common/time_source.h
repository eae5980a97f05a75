// Wall-clock time behind an interface, so code that reasons about deadlines
// and leases (the coordinator's lease table, staleness waits) can be tested
// with a fake clock (tests/fakes/fake_time_source.h) instead of sleeping.
#ifndef CAIRN_COMMON_TIME_SOURCE_H_
#define CAIRN_COMMON_TIME_SOURCE_H_

#include "absl/time/time.h"

namespace cairn {

// A source of the current time. Implementations are thread-safe.
class TimeSource {
 public:
  virtual ~TimeSource() = default;

  // The current time. Successive calls never go backwards.
  virtual absl::Time Now() = 0;
};

// absl::Now(). Thread-safe; stateless.
class RealTimeSource : public TimeSource {
 public:
  absl::Time Now() override;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_TIME_SOURCE_H_
