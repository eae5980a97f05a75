#include "server/coordinator/coordinator_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "server/coordinator/partition_map_builder.h"

namespace cairn {
namespace {

int CountRole(const std::vector<MemberRecord>& members, v1::MemberRole role) {
  return static_cast<int>(std::count_if(members.begin(), members.end(),
                                        [role](const MemberRecord& m) { return m.role == role; }));
}

std::string DescribeMember(const MemberRecord& record) {
  const std::string& where =
      record.address.empty() ? record.metrics_address : record.address;
  if (where.empty()) return MemberName(record.role, record.id);
  return absl::StrCat(MemberName(record.role, record.id), " (", where, ")");
}

}  // namespace

CoordinatorState::CoordinatorState(v1::JobSpec job, TimeSource* time,
                                   CoordinatorMetrics* metrics)
    : job_(std::move(job)),
      time_(time),
      metrics_(metrics),
      leases_(absl::Milliseconds(job_.lease_timeout_ms())) {
  absl::MutexLock lock(&mu_);
  map_ = BuildPartitionMap(/*version=*/1, job_.num_partitions(), {}, {}, /*ready=*/false);
  RefreshMapLocked();
}

absl::StatusOr<CoordinatorState::Registration> CoordinatorState::RegisterServer(
    int64_t requested_id, const std::string& address, const std::string& metrics_address) {
  RETURN_IF_ERROR(ParseHostPort(address, "RegisterServer.address").status());
  LeaseTable::RegisterArgs args;
  args.role = v1::MEMBER_ROLE_SERVER;
  args.requested_id = requested_id;
  args.address = address;
  args.metrics_address = metrics_address;
  return Register(args);
}

absl::StatusOr<CoordinatorState::Registration> CoordinatorState::RegisterWorker(
    int64_t requested_id, const std::string& metrics_address) {
  LeaseTable::RegisterArgs args;
  args.role = v1::MEMBER_ROLE_WORKER;
  args.requested_id = requested_id;
  args.metrics_address = metrics_address;
  return Register(args);
}

absl::StatusOr<CoordinatorState::Registration> CoordinatorState::Register(
    const LeaseTable::RegisterArgs& given) {
  absl::MutexLock lock(&mu_);
  LeaseTable::RegisterArgs args = given;
  if (args.role == v1::MEMBER_ROLE_WORKER && ready_) {
    args.start_clock = MinLiveWorkerClockLocked(
        args.requested_id >= 0 ? static_cast<uint32_t>(args.requested_id) : kMaxMemberId + 1);
  }
  if (args.role == v1::MEMBER_ROLE_WORKER) {
    // A resumed job's workers go on from the checkpoint's clock.
    args.start_clock = std::max(args.start_clock, job_.resume_from().clock());
  }
  ASSIGN_OR_RETURN(MemberRecord record, leases_.Register(args, time_->Now()));
  const bool passed_barrier = RefreshMapLocked();
  const std::vector<MemberRecord> members = leases_.Snapshot();
  LOG_INFO("{} registered{}{}{}; servers {}/{}, workers {}/{}; map version {}",
           MemberName(record.role, record.id),
           record.incarnation > 1 ? absl::StrCat(" again (incarnation ", record.incarnation, ")")
                                  : "",
           record.address.empty() ? "" : absl::StrCat(" at ", record.address),
           record.role == v1::MEMBER_ROLE_WORKER && record.start_clock > 0
               ? absl::StrCat(", starting at clock ", record.start_clock)
               : "",
           CountRole(members, v1::MEMBER_ROLE_SERVER), job_.num_servers(),
           CountRole(members, v1::MEMBER_ROLE_WORKER), job_.num_workers(), map_.version());
  if (passed_barrier) {
    LOG_INFO("start-up barrier passed: {} servers and {} workers registered; map version {}",
             CountRole(members, v1::MEMBER_ROLE_SERVER), CountRole(members, v1::MEMBER_ROLE_WORKER),
             map_.version());
  }
  return Registration{record.id, map_};
}

absl::StatusOr<CoordinatorState::HeartbeatResult> CoordinatorState::Heartbeat(
    v1::MemberRole role, uint32_t id, int64_t clock) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(leases_.Renew(role, id, clock, time_->Now()).status());
  return HeartbeatResult{leases_.lease_timeout(), map_.version()};
}

absl::Status CoordinatorState::Leave(v1::MemberRole role, uint32_t id, int64_t final_clock) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(MemberRecord record, leases_.Leave(role, id, final_clock));
  RefreshMapLocked();
  if (role == v1::MEMBER_ROLE_WORKER) {
    LOG_INFO("{} left at clock {}; map version {}", DescribeMember(record), record.clock,
             map_.version());
  } else {
    LOG_INFO("{} left; map version {}", DescribeMember(record), map_.version());
  }
  return absl::OkStatus();
}

std::vector<MemberRecord> CoordinatorState::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  std::vector<MemberRecord> expired = leases_.ExpireLeases(time_->Now());
  if (expired.empty()) return expired;
  RefreshMapLocked();
  for (const MemberRecord& record : expired) {
    LOG_WARN("{} lease expired: DEAD (map version {})", DescribeMember(record), map_.version());
    if (metrics_ != nullptr) metrics_->CountLeaseExpiration(record.role);
  }
  return expired;
}

v1::PartitionMap CoordinatorState::Map() const {
  absl::MutexLock lock(&mu_);
  return map_;
}

v1::PartitionMap CoordinatorState::WaitForMap(uint64_t known_version,
                                              absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, known_version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || map_.version() > known_version;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return map_;
}

std::vector<v1::Member> CoordinatorState::Members() const {
  const absl::Time now = time_->Now();
  std::vector<v1::Member> out;
  for (const MemberRecord& record : leases_.Snapshot()) {
    out.push_back(ToMemberProto(record, now));
  }
  return out;
}

bool CoordinatorState::ready() const {
  absl::MutexLock lock(&mu_);
  return ready_;
}

bool CoordinatorState::WaitUntilReady(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_ || shutdown_; };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return ready_;
}

CoordinatorState::Missing CoordinatorState::MissingMembers() const {
  Missing missing;
  for (uint32_t id = 0; id < job_.num_servers(); ++id) {
    if (!leases_.Find(v1::MEMBER_ROLE_SERVER, id)) missing.servers.push_back(id);
  }
  for (uint32_t id = 0; id < job_.num_workers(); ++id) {
    if (!leases_.Find(v1::MEMBER_ROLE_WORKER, id)) missing.workers.push_back(id);
  }
  return missing;
}

void CoordinatorState::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

int64_t CoordinatorState::MinLiveWorkerClockLocked(uint32_t except_id) const {
  bool any = false;
  int64_t min_clock = 0;
  for (const MemberRecord& record : leases_.Snapshot()) {
    if (record.role != v1::MEMBER_ROLE_WORKER || record.state != v1::MEMBER_STATE_ALIVE ||
        record.id == except_id) {
      continue;
    }
    min_clock = any ? std::min(min_clock, record.clock) : record.clock;
    any = true;
  }
  return min_clock;
}

bool CoordinatorState::RefreshMapLocked() {
  const std::vector<MemberRecord> members = leases_.Snapshot();
  const bool was_ready = ready_;
  if (!ready_ &&
      CountRole(members, v1::MEMBER_ROLE_SERVER) >= static_cast<int>(job_.num_servers()) &&
      CountRole(members, v1::MEMBER_ROLE_WORKER) >= static_cast<int>(job_.num_workers())) {
    ready_ = true;
  }
  std::vector<v1::PartitionAssignment> assignments(map_.assignments().begin(),
                                                   map_.assignments().end());
  // Before ready nobody holds state, so the placement follows the live
  // servers; from ready on it is frozen (moving a partition needs a state
  // transfer). An empty placement (no server was alive at ready) is still free.
  if (!was_ready || assignments.empty()) {
    std::vector<uint32_t> alive_servers;
    for (const MemberRecord& record : members) {
      if (record.role == v1::MEMBER_ROLE_SERVER && record.state == v1::MEMBER_STATE_ALIVE) {
        alive_servers.push_back(record.id);
      }
    }
    assignments = AssignRoundRobin(job_.num_partitions(), alive_servers);
  }
  v1::PartitionMap next =
      BuildPartitionMap(map_.version(), job_.num_partitions(), assignments, members, ready_);
  if (!SameMapContent(next, map_)) next.set_version(map_.version() + 1);
  map_ = std::move(next);
  if (metrics_ != nullptr) {
    metrics_->SetMembers(members);
    metrics_->SetMapVersion(map_.version());
  }
  return ready_ && !was_ready;
}

}  // namespace cairn
