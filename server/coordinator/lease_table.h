// Membership with leases: who is in the job, where to reach them, and whether
// their lease still runs. One record per (role, id); servers and workers have
// separate id spaces.
//
// A member is ALIVE from registration until its lease runs out without a
// renewal (then DEAD, found by ExpireLeases) or until it leaves (LEFT).
// Registering again under the id of a DEAD or LEFT member brings that id back
// ALIVE; ids are never reused for a different member while ALIVE.
#ifndef CAIRN_SERVER_COORDINATOR_LEASE_TABLE_H_
#define CAIRN_SERVER_COORDINATOR_LEASE_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/member_names.h"
#include "cairn/v1/types.pb.h"

namespace cairn {

// Ids a member may request: 0 .. kMaxMemberId.
inline constexpr uint32_t kMaxMemberId = 65535;

// One member as the lease table records it (a copy; changing it changes nothing).
struct MemberRecord {
  v1::MemberRole role = v1::MEMBER_ROLE_UNSPECIFIED;
  uint32_t id = 0;
  v1::MemberState state = v1::MEMBER_STATE_UNSPECIFIED;
  std::string address;          // servers: host:port of the shard service; workers: empty
  std::string metrics_address;  // host:port of /metrics; may be empty
  absl::Time last_renewal;      // registration or last heartbeat
  absl::Time lease_expiry;      // last_renewal + lease timeout
  int64_t clock = 0;            // workers: last reported clock (or final clock on leave)
  int64_t start_clock = 0;      // workers: the clock it was told to start at
  int incarnation = 0;          // 1 on first registration, +1 on each re-registration
};

// "server 1" / "worker 3".
std::string MemberName(v1::MemberRole role, uint32_t id);

// Thread-safe.
class LeaseTable {
 public:
  // lease_timeout: how long a registration or renewal keeps a member ALIVE (> 0).
  explicit LeaseTable(absl::Duration lease_timeout);

  struct RegisterArgs {
    v1::MemberRole role = v1::MEMBER_ROLE_UNSPECIFIED;
    int64_t requested_id = -1;    // -1: the smallest id this role has never used
    std::string address;
    std::string metrics_address;
    int64_t start_clock = 0;      // workers: recorded as start_clock and clock
  };

  // Registers a member ALIVE with a fresh lease starting at `now`.
  // Errors: InvalidArgument (role unspecified, requested_id < -1 or above
  //   kMaxMemberId), AlreadyExists (the requested id is ALIVE: a replacement
  //   may take it once that lease has expired or the holder has left).
  absl::StatusOr<MemberRecord> Register(const RegisterArgs& args, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Heartbeat: extends the lease of an ALIVE member to now + lease timeout and,
  // for workers, records `clock` (ignored when negative).
  // Errors: NotFound when the member is unknown, DEAD or LEFT (it must register again).
  absl::StatusOr<MemberRecord> Renew(v1::MemberRole role, uint32_t id, int64_t clock,
                                     absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Marks an ALIVE or DEAD member LEFT, recording `final_clock` for workers.
  // Leaving twice is OK. Errors: NotFound (unknown member).
  absl::StatusOr<MemberRecord> Leave(v1::MemberRole role, uint32_t id, int64_t final_clock)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Marks DEAD every ALIVE member whose lease_expiry <= now; returns those,
  // sorted by (role, id).
  std::vector<MemberRecord> ExpireLeases(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives every ALIVE member a lease until at least now + lease_timeout:
  // after the coordinator itself did not run for a while, it cannot tell
  // the dead from those whose heartbeats it did not read.
  void ExtendAll(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces every record with `records` (a restored coordinator's members):
  // ALIVE members get a fresh lease, last_renewal = now and lease_expiry =
  // now + lease timeout, so none is declared dead for time it could not
  // reach the coordinator; DEAD and LEFT ones stay so. Empty: forget all.
  void Restore(const std::vector<MemberRecord>& records, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // All members ever registered, sorted by (role, id).
  std::vector<MemberRecord> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  std::optional<MemberRecord> Find(v1::MemberRole role, uint32_t id) const
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration lease_timeout() const { return lease_timeout_; }

 private:
  using Key = std::pair<int, uint32_t>;  // (role, id)

  // Constant after construction.
  const absl::Duration lease_timeout_;

  mutable absl::Mutex mu_;
  std::map<Key, MemberRecord> members_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_LEASE_TABLE_H_
