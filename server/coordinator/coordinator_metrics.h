// The coordinator's Prometheus metrics, all in one place (docs/metrics.md):
//
//   cairn_coordinator_members{role,state}            gauge: members per role
//       ("server", "worker") and state ("alive", "dead", "left")
//   cairn_coordinator_map_version                    gauge: current partition-map version
//   cairn_coordinator_requests_total{method}         counter: RPCs received, by
//       method name ("RegisterServer", "Heartbeat", ...)
//   cairn_coordinator_lease_expirations_total{role}  counter: members declared
//       DEAD because their lease ran out
//   cairn_coordinator_failovers_total                counter: replica groups whose
//       dead primary was replaced by a promoted backup
//   cairn_coordinator_primary_moves_total            counter: replica groups whose
//       primary moved to a backup to balance primaries after failovers
//   cairn_coordinator_partitions_under_replicated    gauge: partitions with fewer
//       live replicas (primary + backups) than cluster.replication
//   cairn_coordinator_failover_seconds               histogram: from a primary's
//       lease expiry to the first heartbeat of the promoted backup that holds
//       the map of the promotion (or a later one)
//   cairn_coordinator_checkpoints_total{result}, ..._last_checkpoint_timestamp_seconds
//
// Every label value is created up front, so the series count is fixed.
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_METRICS_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "cairn/v1/types.pb.h"
#include "server/coordinator/lease_table.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
class Registry;
}  // namespace prometheus

namespace cairn {

// The method label values, one per rpc of cairn.v1.Coordinator.
inline constexpr const char* kCoordinatorMethods[] = {
    "RegisterServer",    "RegisterWorker", "Heartbeat",  "GetPartitionMap",
    "WatchPartitionMap", "Leave",          "ListMembers",     "ReportCheckpoint",
    "Checkpoint",        "ListCheckpoints", "ReplicaReady"};

// Thread-safe (prometheus-cpp metrics are). The metric objects live in the
// registry, which must outlive this.
class CoordinatorMetrics {
 public:
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  // Sets cairn_coordinator_members from `members` (all of them, any state).
  void SetMembers(const std::vector<MemberRecord>& members);
  void SetMapVersion(uint64_t version);
  // `method` is one of kCoordinatorMethods; other names are not counted.
  void CountRequest(absl::string_view method);
  void CountLeaseExpiration(v1::MemberRole role);
  // A replica group's primary was replaced by a backup.
  void CountFailover();
  // A replica group's primary moved to one of its backups (BalancePrimaries).
  void CountPrimaryMove();
  void SetUnderReplicated(int partitions);
  // Seconds from a primary's lease expiry until the promoted backup
  // heartbeated with the new map.
  void ObserveFailoverSeconds(double seconds);
  // Starts exporting the time of the last complete checkpoint, at
  // `unix_seconds` (the newest record's, or now when there is none). Call
  // once, before any CheckpointCompleted, and only for jobs with checkpoints.
  void EnableCheckpoints(double unix_seconds);
  // A checkpoint completed (`unix_seconds`: when) or failed.
  void CheckpointCompleted(double unix_seconds);
  void CheckpointFailed();
  // A group that lost every copy came back from a checkpoint, losing about
  // `clocks` clocks of updates.
  void CountRestore(int64_t clocks);

 private:
  prometheus::Family<prometheus::Gauge>* last_checkpoint_family_ = nullptr;
  prometheus::Gauge* last_checkpoint_ = nullptr;
  prometheus::Counter* checkpoints_complete_ = nullptr;
  prometheus::Counter* checkpoints_failed_ = nullptr;
  prometheus::Counter* restores_ = nullptr;
  prometheus::Counter* rolled_back_clocks_ = nullptr;
  // Constant after construction; the pointees belong to the registry.
  std::map<std::pair<int, int>, prometheus::Gauge*> members_;  // (role, state)
  prometheus::Gauge* map_version_ = nullptr;
  std::map<std::string, prometheus::Counter*, std::less<>> requests_;
  std::map<int, prometheus::Counter*> lease_expirations_;  // by role
  prometheus::Counter* failovers_ = nullptr;
  prometheus::Counter* primary_moves_ = nullptr;
  prometheus::Gauge* under_replicated_ = nullptr;
  prometheus::Histogram* failover_seconds_ = nullptr;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_METRICS_H_
