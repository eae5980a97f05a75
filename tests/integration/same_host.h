// Helpers of the same-host path's integration tests (docs/shared-memory.md):
// waiting until the servers accepted a client's regions, and comparing
// values bit for bit.
#ifndef CAIRN_TESTS_INTEGRATION_SAME_HOST_H_
#define CAIRN_TESTS_INTEGRATION_SAME_HOST_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "worker/client/client.h"

namespace cairn::testing {

// Waits until `regions` servers accepted the client's region (the offers
// are answered in the background after the client connects); false if
// they did not within 10 s.
inline bool WaitForRegions(const Client& client, uint64_t regions) {
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (client.Stats().shared_memory_regions < regions && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return client.Stats().shared_memory_regions >= regions;
}

inline bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_INTEGRATION_SAME_HOST_H_
