// One registration of this worker with the coordinator, as long as it lasts
// (docs/design.md, Membership and leases): the heartbeat that keeps its lease,
// every JobSpec.heartbeat_interval_ms, carrying the worker's clock and map
// version; word of a newer partition map in an answer; and the end of the
// registration. The session is lost, for good, when
// - the coordinator declares the worker dead (a heartbeat answered
//   NOT_FOUND): a zombie must not go on pushing (field case B13);
// - the coordinator ends the job as failed (a server's data lost, a worker
//   lost under on_worker_loss: fail);
// - no heartbeat is answered for max(10 s, 4 leases): the coordinator, and
//   so the job, is gone (field case C06: end within the grace).
// Gaps are timed on the monotonic clock: a step of the wall clock does not
// end a session with a live coordinator.
//
// Thread-safe. The heartbeat runs on a thread of its own.
#ifndef CAIRN_WORKER_CLIENT_WORKER_SESSION_H_
#define CAIRN_WORKER_CLIENT_WORKER_SESSION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/types.pb.h"
#include "common/coordinator_channel.h"

namespace cairn {

class WorkerSession {
 public:
  // What a heartbeat reports and whom it tells of a newer map; each is
  // called on the heartbeat thread.
  struct Hooks {
    std::function<int64_t()> clock;
    std::function<uint64_t()> map_version;  // 0 before the first map
    // An answer named a map newer than map_version(). Must only queue: a
    // slow map fetch must not hold the next heartbeat past the lease.
    std::function<void()> on_newer_map;
  };

  // `coordinator` must outlive the session; `job` is the registration's.
  WorkerSession(CoordinatorChannel* coordinator, uint32_t worker_id, uint64_t incarnation,
                const v1::JobSpec& job);
  // Stops the heartbeat and waits for its thread.
  ~WorkerSession();

  WorkerSession(const WorkerSession&) = delete;
  WorkerSession& operator=(const WorkerSession&) = delete;

  // Starts the heartbeat thread. Call at most once.
  void StartHeartbeats(Hooks hooks);
  // No heartbeat after the one in flight (the worker has left); returns at
  // once.
  void Stop() { stop_.store(true); }
  // Stop, then waits for the heartbeat thread to end (at most one heartbeat
  // call and 50 ms); Lost() still answers afterwards.
  void StopAndWait();

  // OK while the registration lasts; afterwards why it ended
  // (UNAVAILABLE: declared dead or the coordinator lost; CANCELLED: the job
  // failed, with the coordinator's reason).
  absl::Status Lost() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void HeartbeatLoop(const Hooks& hooks);
  void SetLost(absl::Status reason) ABSL_LOCKS_EXCLUDED(mu_);

  CoordinatorChannel* const coordinator_;
  const uint32_t worker_id_;
  const uint64_t incarnation_;
  const int64_t heartbeat_interval_ms_;
  const int64_t lease_timeout_ms_;

  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable absl::Mutex mu_;
  absl::Status lost_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_WORKER_SESSION_H_
