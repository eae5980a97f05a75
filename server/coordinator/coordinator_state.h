// The coordinator's domain state: membership (a LeaseTable), the partition
// map and its version, the start-up barrier, failover, and the state a
// restarted coordinator resumes from. The gRPC handlers in
// coordinator_service.h only translate to and from these calls.
//
// Map rules:
// - The version starts at 1 and bumps on every change of the map's content:
//   assignment, a server's state or address, the live worker set, `ready`.
// - `ready` (the start-up barrier) latches once job.num_servers servers and
//   job.num_workers workers have each registered at least once.
// - Before ready, partitions are placed round-robin over the ALIVE servers
//   in replica groups of job.replication copies (AssignRoundRobin),
//   recomputed on every change. At ready the placement freezes: servers hold
//   state from then on.
// - Failover (failover.h): when a server's lease expires, each group it is
//   primary of gets its first ALIVE backup as primary, and it leaves every
//   backups list; one version bump. With no live backup (replication 1) the
//   partitions stay on the DEAD server. A server registering after ready
//   owns nothing; one coming back under the id of a DEAD primary that had no
//   live backup is that primary again.
// - A worker's start_clock: 0 before ready; after ready (a late joiner or a
//   replacement) the minimum last-reported clock of the other live workers,
//   0 when there are none; never below the clock of the checkpoint the job
//   resumed from (job.resume_from).
//
// Persistence and restart (with a CoordinatorStore): the job, the map and
// every member record are written, synced, on every registration, leave,
// expiry and failover (not on heartbeats: worker clocks are as of the last
// such change). Restore() takes them back at the next start: ids, map
// version and `ready` go on, and every ALIVE member gets a fresh lease of
// lease_timeout from the restore, so nobody is declared dead for the
// coordinator's own downtime. Until the first restored member heartbeats
// (re-attaches), registrations answer Unavailable (the clients retry): a
// restore cannot tell a restarted coordinator from a whole job started
// again over the old state. If no restored member re-attaches within one
// lease_timeout, the stored state belonged to processes that are gone: it is
// dropped and the job starts afresh (version 1, the constructor's job).
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"
#include "cairn/v1/types.pb.h"
#include "common/time_source.h"
#include "server/coordinator/coordinator_metrics.h"
#include "server/coordinator/coordinator_store.h"
#include "server/coordinator/lease_table.h"
#include "server/coordinator/state_codec.h"

namespace cairn {

// Thread-safe. Lock order: mu_, then the lease table's own lock.
class CoordinatorState {
 public:
  // job: served to every member; num_partitions (>= 1), num_servers,
  //   num_workers, replication (0 reads as 1) and lease_timeout_ms (> 0)
  //   are used here.
  // time: lease clock; must outlive this.
  // metrics: may be null; must outlive this.
  // store: where the state is written on every change; null: nowhere. Must
  //   outlive this.
  CoordinatorState(v1::JobSpec job, TimeSource* time, CoordinatorMetrics* metrics,
                   CoordinatorStore* store = nullptr);

  // Takes back the state a previous coordinator of the same job stored
  // (call before serving; see the header comment). `stored.job` replaces the
  // constructor's job while the state is kept. `where` names the store in logs.
  void Restore(PersistedState stored, const std::string& where) ABSL_LOCKS_EXCLUDED(mu_);

  struct Registration {
    uint32_t id = 0;
    uint64_t incarnation = 0;  // 1 at the id's first registration, +1 at each again
    v1::PartitionMap map;      // after the registration
  };

  // Registers a server reachable at `address` (host:port, non-empty).
  // requested_id: -1 for the smallest never-used id, else that id.
  // Errors: InvalidArgument (bad address or id), AlreadyExists (id is ALIVE),
  //   Unavailable (a restored state waits for its members to re-attach).
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
    v1::JobState job_state = v1::JOB_STATE_RUNNING;  // as EndJob set it
    std::string job_end_reason;
  };
  // Renews the lease; `clock` is a worker's current clock (ignored for
  // servers and when negative); `map_version` the map version the member
  // holds (times failovers); `incarnation` the registration renewing (0:
  // whichever holds the id). Errors: NotFound when the member is unknown,
  // DEAD or LEFT, or when the id was registered again since `incarnation`
  // (a process replaced by a restart under its id): it must register again.
  absl::StatusOr<HeartbeatResult> Heartbeat(v1::MemberRole role, uint32_t id, int64_t clock,
                                            uint64_t map_version = 0, uint64_t incarnation = 0)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Where a group that lost every copy comes back from: the newest complete
  // checkpoint record, or nullopt. Called under the state's lock; must not
  // call back. Set once, before serving.
  void SetCheckpointSource(std::function<std::optional<v1::CheckpointRecord>()> source) {
    checkpoint_source_ = std::move(source);
  }

  // A server joining replica group `group` (it registered after the barrier
  // and was listed in `joining`) received the group's state: it becomes a
  // backup. Returns the map version that lists it. FailedPrecondition when
  // it was not joining the group.
  absl::StatusOr<uint64_t> ReplicaReady(uint32_t server_id, uint32_t group)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Marks the member LEFT (a clean exit; a worker leaves the barrier).
  // `incarnation`: the registration leaving (0: whichever holds the id).
  // Errors: NotFound (unknown member), FailedPrecondition (the id was
  // registered again since `incarnation`: the newer process stays).
  absl::Status Leave(v1::MemberRole role, uint32_t id, int64_t final_clock,
                     uint64_t incarnation = 0) ABSL_LOCKS_EXCLUDED(mu_);

  // Declares DEAD every member whose lease ran out by time->Now(), logs each
  // ("server 1 (127.0.0.1:1234) lease expired: DEAD"), fails over the replica
  // groups of dead primaries and returns the dead. While a restored state
  // waits for its members, declares nobody dead; once its wait has run out
  // with nobody back, drops it (see the header comment).
  std::vector<MemberRecord> ExpireLeases() ABSL_LOCKS_EXCLUDED(mu_);
  // The coordinator did not run for `stalled` (a paused process, a starved
  // or stopped machine): heartbeats that came meanwhile were not read, so
  // every live member's lease runs a full lease_timeout from now instead of
  // all of them being declared dead at once. Logs it.
  void ForgiveStall(absl::Duration stalled) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration lease_timeout() const { return leases_.lease_timeout(); }

  v1::PartitionMap Map() const ABSL_LOCKS_EXCLUDED(mu_);

  // Long poll: returns the map as soon as its version exceeds `known_version`,
  // or when `timeout` (real time, not the TimeSource) has passed, or at
  // Shutdown() or EndJob(), whichever comes first.
  v1::PartitionMap WaitForMap(uint64_t known_version, absl::Duration timeout) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every member ever registered, by (role, id), with lease_age_ms.
  std::vector<v1::Member> Members() const ABSL_LOCKS_EXCLUDED(mu_);

  // The start-up barrier has passed (and a restored state has been confirmed
  // by a member re-attaching).
  bool ready() const ABSL_LOCKS_EXCLUDED(mu_);

  // True while a restored state waits for its first member to re-attach.
  bool restoring() const ABSL_LOCKS_EXCLUDED(mu_);

  // The barrier had passed and no worker is ALIVE: every worker left or died.
  bool JobOver() const ABSL_LOCKS_EXCLUDED(mu_);

  // Writes the state to the store now (e.g. at a graceful stop, for fresh
  // worker clocks); no-op without a store. Errors: the store's.
  absl::Status Persist() ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the stored state (the job is over: the next start is a new job).
  absl::Status ForgetStored() ABSL_LOCKS_EXCLUDED(mu_);

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

  // Announces how the job ended (FINISHED or FAILED, with the cause) in
  // every heartbeat answer from now on (job_end.h). The first call wins.
  void EndJob(v1::JobState state, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  // Replica groups that lost every copy after the start-up barrier when no
  // complete checkpoint could restore them: their values are gone.
  std::vector<uint32_t> UnrecoverableGroups() const ABSL_LOCKS_EXCLUDED(mu_);

  // What EndJob announced: RUNNING and "" before.
  std::pair<v1::JobState, std::string> Ending() const ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes every WaitForMap and WaitUntilReady now and makes later ones return
  // at once.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // The job served to members (a copy: a dropped restore switches it back).
  v1::JobSpec job() const ABSL_LOCKS_EXCLUDED(mu_);

  // A checkpoint request starts or ends (CheckpointDriver::Run). While one
  // runs no primary moves (BalancePrimariesLocked): its servers were chosen
  // as the primaries of the map it started with, and each snapshots the
  // partitions it is primary of.
  void CheckpointStarted() ABSL_LOCKS_EXCLUDED(mu_);
  void CheckpointEnded() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A failover whose promoted server has not yet heartbeated with its map.
  struct PendingFailover {
    absl::Time lease_expiry;  // of the dead primary
    uint64_t map_version = 0;  // the promotion's
  };
  // A restored state waiting for its members.
  struct Restoring {
    bool waiting = false;            // no member re-attached yet
    absl::Time restored_at;
    std::string where;               // the store, for logs
    std::set<std::pair<int, uint32_t>> absent;  // restored ALIVE members not yet back
    size_t total = 0;
  };

  absl::StatusOr<Registration> Register(const LeaseTable::RegisterArgs& args)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The minimum clock of live workers other than `except_id`, 0 if none.
  int64_t MinLiveWorkerClockLocked(uint32_t except_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds the map from the lease table; bumps the version when the content
  // changed; publishes metrics. `frozen`: the placement to use once ready
  // (after a failover); null: the map's own. Returns true when this call
  // latched `ready`.
  bool RefreshMapLocked(const std::vector<v1::PartitionAssignment>* frozen = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails over the groups of the servers in `expired`; refreshes the map.
  void FailOverLocked(const std::vector<MemberRecord>& expired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK when `incarnation` is 0 or the one registered under (role, id) (or
  // the member is unknown: the caller's own lookup names that); else
  // `error` naming both incarnations.
  absl::Status CheckIncarnationLocked(v1::MemberRole role, uint32_t id, uint64_t incarnation,
                                      absl::Status (*error)(absl::string_view)) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A restored member heartbeated or left: it is back.
  void NoteReattachedLocked(v1::MemberRole role, uint32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets a restored state nobody came back to; starts afresh.
  void DropRestoredLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PersistLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves every group whose primary is dead and has no live copy onto the
  // least loaded live server, to be loaded from the newest complete
  // checkpoint (`restore_record`); logs and counts the clocks rolled back.
  void RestoreLostGroupsLocked(std::vector<v1::PartitionAssignment>* assignments)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives replica groups short of copies joiners (failover.h AssignJoiners)
  // in `changed` (null: the current assignments) and publishes the map once
  // (with `changed`, also when no joiner was added). Servers that already
  // hold groups are candidates only for groups short for at least the job's
  // rereplication_delay; called at every lease tick for those.
  void ReplicateLocked(std::vector<v1::PartitionAssignment>* changed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t ReplicationLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves primaries back after failovers (failover.h BalancePrimaries) and
  // publishes the map, once every group has a live primary and no joiner,
  // the job runs and no checkpoint request is under way; logs each move.
  // Called at every lease tick without an expiry.
  void BalancePrimariesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const v1::JobSpec fresh_job_;  // the job as configured, for a dropped restore
  std::function<std::optional<v1::CheckpointRecord>()> checkpoint_source_;  // set before serving
  TimeSource* const time_;
  CoordinatorMetrics* const metrics_;
  CoordinatorStore* const store_;
  LeaseTable leases_;

  mutable absl::Mutex mu_;
  v1::JobSpec job_ ABSL_GUARDED_BY(mu_);
  v1::PartitionMap map_ ABSL_GUARDED_BY(mu_);
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  v1::JobState job_state_ ABSL_GUARDED_BY(mu_) = v1::JOB_STATE_RUNNING;
  std::string job_end_reason_ ABSL_GUARDED_BY(mu_);
  std::set<uint32_t> unrecoverable_groups_ ABSL_GUARDED_BY(mu_);
  Restoring restoring_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, PendingFailover> pending_failovers_ ABSL_GUARDED_BY(mu_);  // by promoted id
  // Replica groups short of copies, and since when (rereplication_delay).
  std::map<uint32_t, absl::Time> short_since_ ABSL_GUARDED_BY(mu_);
  int checkpoints_running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_STATE_H_
