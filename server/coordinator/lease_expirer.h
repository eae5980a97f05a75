// A background thread that declares members DEAD when their lease runs out:
// calls CoordinatorState::ExpireLeases() every `period` (the coordinator uses
// heartbeat_interval / 2, so a death is seen at most half a heartbeat late).
// When one of its rounds comes more than half a lease late, the coordinator
// itself did not run meanwhile (a paused process, a starved machine): it
// extends every lease first (CoordinatorState::ForgiveStall), so members
// whose heartbeats it could not read are not all declared dead at once.
#ifndef CAIRN_SERVER_COORDINATOR_LEASE_EXPIRER_H_
#define CAIRN_SERVER_COORDINATOR_LEASE_EXPIRER_H_

#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/coordinator/coordinator_state.h"

namespace cairn {

// Thread-safe: Stop() may be called from any thread, more than once.
class LeaseExpirer {
 public:
  // Called on the expirer's thread with the members each round declared DEAD
  // (never with an empty list).
  using OnExpired = std::function<void(const std::vector<MemberRecord>&)>;

  // Starts the thread. state must outlive this; period > 0; on_expired may
  // be null.
  LeaseExpirer(CoordinatorState* state, absl::Duration period, OnExpired on_expired = nullptr);
  // Stops and joins the thread.
  ~LeaseExpirer();

  LeaseExpirer(const LeaseExpirer&) = delete;
  LeaseExpirer& operator=(const LeaseExpirer&) = delete;

  // Stops and joins the thread; returns once no ExpireLeases call runs.
  void Stop();

 private:
  void Run();

  CoordinatorState* const state_;
  const absl::Duration period_;
  const OnExpired on_expired_;
  absl::Notification stop_;
  absl::Mutex join_mu_;  // serializes concurrent Stop() calls
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_LEASE_EXPIRER_H_
