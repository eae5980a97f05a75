// Pure functions that turn membership into a cairn.v1.PartitionMap: the
// round-robin placement of partitions in replica groups, and the map's
// member lists. Failover (changing a frozen placement) is in failover.h.
// No state and no locking; CoordinatorState decides when to call them and
// owns the version.
#ifndef CAIRN_SERVER_COORDINATOR_PARTITION_MAP_BUILDER_H_
#define CAIRN_SERVER_COORDINATOR_PARTITION_MAP_BUILDER_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"
#include "server/coordinator/lease_table.h"

namespace cairn {

// Places `num_partitions` partitions on `server_ids` (ascending, unique; n of
// them) in replica groups: partition p gets primary server_ids[p % n] and
// group = that primary; the group's backups are the next
// min(replication, n) - 1 servers after it in `server_ids`, cyclically. So
// every partition of a group has the same primary and backups. Returns one
// assignment per partition, indexed by partition; empty when `server_ids` is
// empty. replication >= 1.
std::vector<v1::PartitionAssignment> AssignRoundRobin(uint32_t num_partitions,
                                                      absl::Span<const uint32_t> server_ids,
                                                      uint32_t replication = 1);

// The member as the wire shows it. lease_age_ms = now - last_renewal, in
// milliseconds (0 when `now` is absl::InfinitePast(), as in maps, whose
// content must not change with the passing of time).
v1::Member ToMemberProto(const MemberRecord& record, absl::Time now = absl::InfinitePast());

// The map of version `version`:
//   assignments: `assignments` as given;
//   servers: every server in `members` (ALIVE, DEAD or LEFT), by id;
//   workers: the ALIVE workers in `members`, by id (the BSP barrier's
//            membership: a DEAD or LEFT worker no longer holds anyone back).
// `members` sorted by (role, id), as LeaseTable::Snapshot returns them.
v1::PartitionMap BuildPartitionMap(uint64_t version, uint32_t num_partitions,
                                   const std::vector<v1::PartitionAssignment>& assignments,
                                   absl::Span<const MemberRecord> members, bool ready);

// True when `a` and `b` are equal in everything but their version.
bool SameMapContent(const v1::PartitionMap& a, const v1::PartitionMap& b);

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_PARTITION_MAP_BUILDER_H_
