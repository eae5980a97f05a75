#include "server/coordinator/coordinator_metrics.h"

#include "common/metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace cairn {
namespace {

constexpr v1::MemberRole kRoles[] = {v1::MEMBER_ROLE_SERVER, v1::MEMBER_ROLE_WORKER};
constexpr v1::MemberState kStates[] = {v1::MEMBER_STATE_ALIVE, v1::MEMBER_STATE_DEAD,
                                       v1::MEMBER_STATE_LEFT};

}  // namespace

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& registry) {
  auto& members = prometheus::BuildGauge()
                      .Name("cairn_coordinator_members")
                      .Help("Members of the job known to the coordinator, by role and state.")
                      .Register(registry);
  for (v1::MemberRole role : kRoles) {
    for (v1::MemberState state : kStates) {
      members_[{role, state}] =
          &members.Add({{"role", RoleName(role)}, {"state", StateName(state)}});
    }
  }
  map_version_ = &prometheus::BuildGauge()
                      .Name("cairn_coordinator_map_version")
                      .Help("Version of the partition map the coordinator serves.")
                      .Register(registry)
                      .Add({});
  auto& requests = prometheus::BuildCounter()
                       .Name("cairn_coordinator_requests_total")
                       .Help("RPCs the coordinator received, by method.")
                       .Register(registry);
  for (const char* method : kCoordinatorMethods) {
    requests_[method] = &requests.Add({{"method", method}});
  }
  auto& expirations = prometheus::BuildCounter()
                          .Name("cairn_coordinator_lease_expirations_total")
                          .Help("Members declared dead because their lease ran out, by role.")
                          .Register(registry);
  for (v1::MemberRole role : kRoles) {
    lease_expirations_[role] = &expirations.Add({{"role", RoleName(role)}});
  }
  failovers_ = &prometheus::BuildCounter()
                    .Name("cairn_coordinator_failovers_total")
                    .Help("Replica groups whose dead primary was replaced by a promoted backup.")
                    .Register(registry)
                    .Add({});
  primary_moves_ = &prometheus::BuildCounter()
                        .Name("cairn_coordinator_primary_moves_total")
                        .Help("Replica groups whose primary moved to one of their backups to "
                              "balance primaries over the live servers after failovers.")
                        .Register(registry)
                        .Add({});
  under_replicated_ =
      &prometheus::BuildGauge()
           .Name("cairn_coordinator_partitions_under_replicated")
           .Help("Partitions with fewer live replicas (primary and backups) than the "
                 "replication factor.")
           .Register(registry)
           .Add({});
  failover_seconds_ =
      &prometheus::BuildHistogram()
           .Name("cairn_coordinator_failover_seconds")
           .Help("Time from a primary's lease expiry to the first heartbeat of the promoted "
                 "backup holding the new partition map.")
           .Register(registry)
           .Add({}, prometheus::Histogram::BucketBoundaries(LatencyBuckets()));
  last_checkpoint_family_ =
      &prometheus::BuildGauge()
           .Name("cairn_coordinator_last_checkpoint_timestamp_seconds")
           .Help("Unix time at which the last complete checkpoint was recorded (the "
                 "coordinator's start while there is none); absent without checkpoint.dir.")
           .Register(registry);
  auto& checkpoints = prometheus::BuildCounter()
                          .Name("cairn_coordinator_checkpoints_total")
                          .Help("Checkpoints by result: complete (every partition reported and "
                                "recorded) or failed.")
                          .Register(registry);
  checkpoints_complete_ = &checkpoints.Add({{"result", "complete"}});
  checkpoints_failed_ = &checkpoints.Add({{"result", "failed"}});
  restores_ = &prometheus::BuildCounter()
                   .Name("cairn_coordinator_group_restores_total")
                   .Help("Replica groups that lost every copy and were restored from the last "
                         "complete checkpoint onto a live server.")
                   .Register(registry)
                   .Add({});
  rolled_back_clocks_ = &prometheus::BuildCounter()
                             .Name("cairn_coordinator_rolled_back_clocks_total")
                             .Help("Clocks of updates lost by those restores (the workers' "
                                   "minimum clock at the restore minus the checkpoint's).")
                             .Register(registry)
                             .Add({});
}

void CoordinatorMetrics::EnableCheckpoints(double unix_seconds) {
  if (last_checkpoint_ == nullptr) last_checkpoint_ = &last_checkpoint_family_->Add({});
  last_checkpoint_->Set(unix_seconds);
}

void CoordinatorMetrics::CheckpointCompleted(double unix_seconds) {
  if (last_checkpoint_ != nullptr) last_checkpoint_->Set(unix_seconds);
  checkpoints_complete_->Increment();
}

void CoordinatorMetrics::CheckpointFailed() { checkpoints_failed_->Increment(); }

void CoordinatorMetrics::CountRestore(int64_t clocks) {
  restores_->Increment();
  rolled_back_clocks_->Increment(static_cast<double>(clocks));
}

void CoordinatorMetrics::SetMembers(const std::vector<MemberRecord>& members) {
  std::map<std::pair<int, int>, int> counts;
  for (const MemberRecord& record : members) ++counts[{record.role, record.state}];
  for (auto& [key, gauge] : members_) {
    auto it = counts.find(key);
    gauge->Set(it == counts.end() ? 0 : it->second);
  }
}

void CoordinatorMetrics::SetMapVersion(uint64_t version) {
  map_version_->Set(static_cast<double>(version));
}

void CoordinatorMetrics::CountRequest(absl::string_view method) {
  auto it = requests_.find(method);
  if (it != requests_.end()) it->second->Increment();
}

void CoordinatorMetrics::CountLeaseExpiration(v1::MemberRole role) {
  auto it = lease_expirations_.find(role);
  if (it != lease_expirations_.end()) it->second->Increment();
}

void CoordinatorMetrics::CountFailover() { failovers_->Increment(); }

void CoordinatorMetrics::CountPrimaryMove() { primary_moves_->Increment(); }

void CoordinatorMetrics::SetUnderReplicated(int partitions) {
  under_replicated_->Set(static_cast<double>(partitions));
}

void CoordinatorMetrics::ObserveFailoverSeconds(double seconds) {
  failover_seconds_->Observe(seconds);
}

}  // namespace cairn
