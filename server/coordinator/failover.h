// Failover of replica groups (docs/design.md, Failure and recovery), as pure
// functions over a frozen placement (partition_map_builder.h): when a server
// is declared DEAD, each group it is primary of gets its first live backup
// as primary, and the dead server leaves every backups list. A group with no
// live backup (always so with replication 1) keeps the dead primary: its
// partitions wait for a restore.
#ifndef CAIRN_SERVER_COORDINATOR_FAILOVER_H_
#define CAIRN_SERVER_COORDINATOR_FAILOVER_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cairn/v1/types.pb.h"

namespace cairn {

// What FailOver did to one replica group.
struct GroupFailover {
  uint32_t group = 0;
  uint32_t dead = 0;                 // the primary that died
  bool promoted = false;             // false: no live backup, the primary stays `dead`
  uint32_t new_primary = 0;          // when promoted
  std::vector<uint32_t> partitions;  // the group's partitions, ascending
};

// Applies the death of server `dead` to `assignments` (indexed by partition):
// for every group whose primary is `dead`, the first backup in
// `alive_servers` becomes primary and leaves the backups; `dead` is removed
// from every backups list. Returns one entry per group `dead` was primary
// of, by group id. Partitions of one group must share primary and backups
// (AssignRoundRobin's placement); they stay so.
std::vector<GroupFailover> FailOver(uint32_t dead, const std::set<uint32_t>& alive_servers,
                                    std::vector<v1::PartitionAssignment>* assignments);

// The groups with a live primary and fewer than `replication` live replicas
// (primary, backups, joiners) in `alive_servers`.
std::set<uint32_t> ShortGroups(const std::set<uint32_t>& alive_servers, uint32_t replication,
                               const std::vector<v1::PartitionAssignment>& assignments);

// Re-replication: every short group (ShortGroups) gets joiners from
// `alive_servers` not yet in it, least loaded first, until it has
// `replication` or no server is left; every partition of the group lists
// them in `joining`. Only a group in `overdue` (short for longer than the
// job's rereplication_delay) takes servers that already replicate other
// groups; any short group takes empty ones (one that just registered: a
// replacement, or a server rejoining after it was declared dead), so a
// server that comes back soon gets the copies it lost instead of the
// survivors copying them twice. Returns the (group, server) pairs added.
std::vector<std::pair<uint32_t, uint32_t>> AssignJoiners(
    const std::set<uint32_t>& alive_servers, uint32_t replication,
    const std::set<uint32_t>& overdue, std::vector<v1::PartitionAssignment>* assignments);

// The joiner `server` holds group `group`'s state now: it moves from
// `joining` to `backups` in every partition of the group. False when it was
// not joining the group.
bool PromoteJoiner(uint32_t server, uint32_t group,
                   std::vector<v1::PartitionAssignment>* assignments);

// Partitions whose primary and backups together hold fewer than
// `replication` servers in `alive_servers`.
int CountUnderReplicated(const std::vector<v1::PartitionAssignment>& assignments,
                         const std::set<uint32_t>& alive_servers, uint32_t replication);

// One replica group whose primary BalancePrimaries moved to a backup.
struct PrimaryMove {
  uint32_t group = 0;
  uint32_t from = 0;                 // the primary before; a backup of the group now
  uint32_t to = 0;                   // the backup that is primary now
  int from_groups = 0;               // groups `from` was primary of before the move
  int to_groups = 0;                 // groups `to` was primary of before the move
  std::vector<uint32_t> partitions;  // the group's partitions, ascending
};

// Moves primaries back after failovers: a failover leaves the promoted
// server primary of its own groups and the dead one's, and a server that
// rejoins only backs groups up, so without this one server may serve every
// push and pull of the job. While a live server is primary of at least two
// groups more than another live server that backs one of those groups up,
// that backup becomes the group's primary and the primary takes the backup's
// place in the group's backups list (the roles swap; every copy stays). The
// most loaded primary gives first, to the least loaded of its backups
// (ties: the lower group id, then the earlier backup); each group moves at
// most once per call. Counts are in groups, as groups are what fail over.
// Only called when no group has a joiner or a dead primary: a joiner does
// not hold the group's state yet. Returns the moves in the order made.
std::vector<PrimaryMove> BalancePrimaries(const std::set<uint32_t>& alive_servers,
                                          std::vector<v1::PartitionAssignment>* assignments);

// "group 1 (partitions 1,4,7): server 3 promoted to primary in place of
// server 2, which backs it up now (primaries balanced: server 2 held 2
// groups, server 3 none)".
std::string DescribePrimaryMove(const PrimaryMove& move);

// "group 1 (partitions 1,3,5): server 1 DEAD, server 2 promoted to primary",
// or "..., no live backup: its partitions stay on the dead server".
std::string DescribeFailover(const GroupFailover& failover);

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_FAILOVER_H_
