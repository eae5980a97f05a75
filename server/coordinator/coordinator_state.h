// The coordinator's domain state: membership (a LeaseTable), the partition
// map and its version, and the start-up barrier. The gRPC handlers in
// coordinator_service.h only translate to and from these calls.
//
// Map rules:
// - The version starts at 1 and bumps on every change of the map's content:
//   assignment, a server's state or address, the live worker set, `ready`.
// - `ready` (the start-up barrier) latches once job.num_servers servers and
//   job.num_workers workers have each registered at least once.
// - Before ready, partitions are placed round-robin over the ALIVE servers
//   (AssignRoundRobin), recomputed on every change. At ready the placement
//   freezes: servers hold state from then on, and moving a partition needs a
//   state transfer (failover, later). A DEAD server keeps its partitions and
//   is shown DEAD; a server registering after ready owns nothing.
// - A worker's start_clock: 0 before ready; after ready (a late joiner or a
//   replacement) the minimum last-reported clock of the other live workers,
//   0 when there are none; never below the clock of the checkpoint the job
//   resumed from (job.resume_from).
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/types.pb.h"
#include "common/time_source.h"
#include "server/coordinator/coordinator_metrics.h"
#include "server/coordinator/lease_table.h"

namespace cairn {

// Thread-safe. Lock order: mu_, then the lease table's own lock.
class CoordinatorState {
 public:
  // job: served to every member; num_partitions (>= 1), num_servers,
  //   num_workers and lease_timeout_ms (> 0) are used here.
  // time: lease clock; must outlive this.
  // metrics: may be null; must outlive this.
  CoordinatorState(v1::JobSpec job, TimeSource* time, CoordinatorMetrics* metrics);

  struct Registration {
    uint32_t id = 0;
    v1::PartitionMap map;  // after the registration
  };

  // Registers a server reachable at `address` (host:port, non-empty).
  // requested_id: -1 for the smallest never-used id, else that id.
  // Errors: InvalidArgument (bad address or id), AlreadyExists (id is ALIVE).
  absl::StatusOr<Registration> RegisterServer(int64_t requested_id, const std::string& address,
                                              const std::string& metrics_address)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Registers a worker; as RegisterServer, without a service address. The
  // worker's start_clock is in the returned map's workers list.
  absl::StatusOr<Registration> RegisterWorker(int64_t requested_id,
                                              const std::string& metrics_address)
      ABSL_LOCKS_EXCLUDED(mu_);

  struct HeartbeatResult {
    absl::Duration lease;   // granted from now
    uint64_t map_version = 0;
  };
  // Renews the lease; `clock` is a worker's current clock (ignored for
  // servers and when negative). Errors: NotFound when the member is unknown,
  // DEAD or LEFT: it must register again.
  absl::StatusOr<HeartbeatResult> Heartbeat(v1::MemberRole role, uint32_t id, int64_t clock)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Marks the member LEFT (a clean exit; a worker leaves the barrier).
  // Errors: NotFound (unknown member).
  absl::Status Leave(v1::MemberRole role, uint32_t id, int64_t final_clock)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Declares DEAD every member whose lease ran out by time->Now(), logs each
  // ("server 1 (127.0.0.1:1234) lease expired: DEAD") and returns them.
  std::vector<MemberRecord> ExpireLeases() ABSL_LOCKS_EXCLUDED(mu_);

  v1::PartitionMap Map() const ABSL_LOCKS_EXCLUDED(mu_);

  // Long poll: returns the map as soon as its version exceeds `known_version`,
  // or when `timeout` (real time, not the TimeSource) has passed, or at
  // Shutdown(), whichever comes first.
  v1::PartitionMap WaitForMap(uint64_t known_version, absl::Duration timeout) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every member ever registered, by (role, id), with lease_age_ms.
  std::vector<v1::Member> Members() const ABSL_LOCKS_EXCLUDED(mu_);

  bool ready() const ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` (real time) for the start-up barrier. True once
  // ready; false after the timeout or at Shutdown() while not ready.
  bool WaitUntilReady(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

  // Ids in [0, expected count) that have never registered, per role; what
  // holds the start-up barrier up.
  struct Missing {
    std::vector<uint32_t> servers;
    std::vector<uint32_t> workers;
  };
  Missing MissingMembers() const ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes every WaitForMap and WaitUntilReady now and makes later ones return
  // at once.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  const v1::JobSpec& job() const { return job_; }

 private:
  absl::StatusOr<Registration> Register(const LeaseTable::RegisterArgs& args)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The minimum clock of live workers other than `except_id`, 0 if none.
  int64_t MinLiveWorkerClockLocked(uint32_t except_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds the map from the lease table; bumps the version when the content
  // changed; publishes metrics. Returns true when this call latched `ready`.
  bool RefreshMapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const v1::JobSpec job_;
  TimeSource* const time_;
  CoordinatorMetrics* const metrics_;
  LeaseTable leases_;

  mutable absl::Mutex mu_;
  v1::PartitionMap map_ ABSL_GUARDED_BY(mu_);
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_
