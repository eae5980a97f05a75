// The calls a worker makes to the coordinator, behind an interface:
// CoordinatorClient (coordinator_client.h) is the real one, over gRPC; unit
// tests of the worker client put a fake in its place
// (tests/fakes/fake_coordinator.h).
#ifndef CAIRN_COMMON_COORDINATOR_CHANNEL_H_
#define CAIRN_COMMON_COORDINATOR_CHANNEL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"

namespace cairn {

// Implementations are thread-safe.
class CoordinatorChannel {
 public:
  virtual ~CoordinatorChannel() = default;

  // Where the coordinator is (for messages).
  virtual const std::string& address() const = 0;

  // Registers this worker, retrying an unreachable coordinator until
  // `deadline`; then Unavailable naming the address. Refusals (a full job, a
  // requested id out of range) come back with the coordinator's code.
  virtual absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request, absl::Time deadline) = 0;

  // Single attempts, each within `timeout`.
  virtual absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                          absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::GetPartitionMapResponse> GetPartitionMap(
      absl::Duration timeout) = 0;
  // Long poll: returns when the map version exceeds `known_version` or after
  // `wait` (with the map as it is).
  virtual absl::StatusOr<v1::GetPartitionMapResponse> WatchPartitionMap(uint64_t known_version,
                                                                        absl::Duration wait) = 0;
  virtual absl::Status Leave(const v1::LeaveRequest& request, absl::Duration timeout) = 0;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_COORDINATOR_CHANNEL_H_
