#include "server/coordinator/coordinator_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "server/coordinator/failover.h"
#include "server/coordinator/partition_map_builder.h"

namespace cairn {
namespace {

// Members of `role` that hold a live lease (the dead and departed are not counted).
int CountRole(const std::vector<MemberRecord>& members, v1::MemberRole role) {
  return static_cast<int>(
      std::count_if(members.begin(), members.end(), [role](const MemberRecord& m) {
        return m.role == role && m.state == v1::MEMBER_STATE_ALIVE;
      }));
}

std::string DescribeMember(const MemberRecord& record) {
  const std::string& where =
      record.address.empty() ? record.metrics_address : record.address;
  if (where.empty()) return MemberName(record.role, record.id);
  return absl::StrCat(MemberName(record.role, record.id), " (", where, ")");
}

std::set<uint32_t> AliveServers(const std::vector<MemberRecord>& members) {
  std::set<uint32_t> alive;
  for (const MemberRecord& m : members) {
    if (m.role == v1::MEMBER_ROLE_SERVER && m.state == v1::MEMBER_STATE_ALIVE) alive.insert(m.id);
  }
  return alive;
}

}  // namespace

CoordinatorState::CoordinatorState(v1::JobSpec job, TimeSource* time,
                                   CoordinatorMetrics* metrics, CoordinatorStore* store)
    : fresh_job_(job),
      time_(time),
      metrics_(metrics),
      store_(store),
      leases_(absl::Milliseconds(job.lease_timeout_ms())) {
  absl::MutexLock lock(&mu_);
  job_ = std::move(job);
  map_ = BuildPartitionMap(/*version=*/1, job_.num_partitions(), {}, {}, /*ready=*/false);
  RefreshMapLocked();
}

void CoordinatorState::Restore(PersistedState stored, const std::string& where) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = time_->Now();
  job_ = std::move(stored.job);
  map_ = std::move(stored.map);
  ready_ = map_.ready();
  leases_.Restore(stored.members, now);
  restoring_ = Restoring{};
  restoring_.restored_at = now;
  restoring_.where = where;
  int servers = 0, workers = 0;
  for (const MemberRecord& m : stored.members) {
    (m.role == v1::MEMBER_ROLE_SERVER ? servers : workers) += 1;
    if (m.state == v1::MEMBER_STATE_ALIVE) restoring_.absent.insert({m.role, m.id});
  }
  restoring_.total = restoring_.absent.size();
  LOG_INFO(
      "restored the state of job {} from {}: map version {}{}, {} servers and {} workers "
      "known, {} alive; their leases run {} from now, waiting for them to re-attach",
      job_.config_hash(), where, map_.version(), ready_ ? " (ready)" : " (not ready)", servers,
      workers, restoring_.total, absl::FormatDuration(leases_.lease_timeout()));
  if (restoring_.absent.empty()) {
    LOG_INFO("no member of the restored job is alive: starting afresh");
    DropRestoredLocked();
    return;
  }
  restoring_.waiting = true;
  RefreshMapLocked();  // publishes metrics; the content is as stored
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
  if (restoring_.waiting) {
    return absl::UnavailableError(absl::StrCat(
        "the coordinator restarted and waits up to ",
        absl::FormatDuration(std::max(absl::ZeroDuration(), restoring_.restored_at +
                                                                 leases_.lease_timeout() -
                                                                 time_->Now())),
        " for the members of its stored job (map version ", map_.version(),
        ") to re-attach; retry"));
  }
  if (job_state_ != v1::JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job is over (", job_state_ == v1::JOB_STATE_FINISHED ? "finished" : "failed",
        job_end_reason_.empty() ? "" : ": ", job_end_reason_, "); it takes no new members"));
  }
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
  bool passed_barrier = false;
  if (record.role == v1::MEMBER_ROLE_SERVER && ready_ && !map_.assignments().empty()) {
    // Rejoin: a server arriving after the barrier backs up the groups left
    // short of replicas, once their primaries sent it their state; groups
    // that lost every copy (their only server died with no other alive to
    // take them) come back onto it from the newest checkpoint at once.
    std::vector<v1::PartitionAssignment> assignments(map_.assignments().begin(),
                                                     map_.assignments().end());
    RestoreLostGroupsLocked(&assignments);
    ReplicateLocked(&assignments);  // the new member and its joins: one version bump
  } else {
    passed_barrier = RefreshMapLocked();
  }
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
  PersistLocked();
  return Registration{record.id, static_cast<uint64_t>(record.incarnation), map_};
}

absl::StatusOr<CoordinatorState::HeartbeatResult> CoordinatorState::Heartbeat(
    v1::MemberRole role, uint32_t id, int64_t clock, uint64_t map_version, uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = time_->Now();
  RETURN_IF_ERROR(CheckIncarnationLocked(role, id, incarnation, absl::NotFoundError));
  RETURN_IF_ERROR(leases_.Renew(role, id, clock, now).status());
  NoteReattachedLocked(role, id);
  if (role == v1::MEMBER_ROLE_SERVER) {
    auto pending = pending_failovers_.find(id);
    if (pending != pending_failovers_.end() && map_version >= pending->second.map_version) {
      const absl::Duration took = now - pending->second.lease_expiry;
      LOG_INFO("server {} holds map version {} as a promoted primary: failover took {} from the "
               "lease expiry",
               id, map_version, absl::FormatDuration(took));
      if (metrics_ != nullptr) metrics_->ObserveFailoverSeconds(absl::ToDoubleSeconds(took));
      pending_failovers_.erase(pending);
    }
  }
  return HeartbeatResult{leases_.lease_timeout(), map_.version(), job_state_, job_end_reason_};
}

void CoordinatorState::EndJob(v1::JobState state, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (job_state_ != v1::JOB_STATE_RUNNING) return;
  job_state_ = state;
  job_end_reason_ = reason;
}

std::pair<v1::JobState, std::string> CoordinatorState::Ending() const {
  absl::MutexLock lock(&mu_);
  return {job_state_, job_end_reason_};
}

std::vector<uint32_t> CoordinatorState::UnrecoverableGroups() const {
  absl::MutexLock lock(&mu_);
  return {unrecoverable_groups_.begin(), unrecoverable_groups_.end()};
}

void CoordinatorState::NoteReattachedLocked(v1::MemberRole role, uint32_t id) {
  if (restoring_.absent.erase({role, id}) == 0) return;
  const absl::Duration after = time_->Now() - restoring_.restored_at;
  if (restoring_.waiting) {
    restoring_.waiting = false;
    LOG_INFO("{} re-attached {} after the restart: the restored state (map version {}) is "
             "confirmed; registrations are open",
             MemberName(role, id), absl::FormatDuration(after), map_.version());
  } else {
    LOG_INFO("{} re-attached {} after the restart", MemberName(role, id),
             absl::FormatDuration(after));
  }
  if (restoring_.absent.empty()) {
    LOG_INFO("all {} members alive at the restart re-attached within {}; no member was declared "
             "dead for the coordinator's downtime",
             restoring_.total, absl::FormatDuration(after));
  }
}

void CoordinatorState::DropRestoredLocked() {
  restoring_.waiting = false;
  restoring_.absent.clear();
  job_ = fresh_job_;
  leases_.Restore({}, time_->Now());
  ready_ = false;
  pending_failovers_.clear();
  map_ = BuildPartitionMap(/*version=*/1, job_.num_partitions(), {}, {}, /*ready=*/false);
  RefreshMapLocked();
  if (store_ != nullptr) {
    if (absl::Status s = store_->Delete(kStateKey); !s.ok()) {
      LOG_ERROR("cannot remove the stored coordinator state: {}", s.message());
    }
  }
}

absl::Status CoordinatorState::CheckIncarnationLocked(
    v1::MemberRole role, uint32_t id, uint64_t incarnation,
    absl::Status (*error)(absl::string_view)) const {
  if (incarnation == 0) return absl::OkStatus();
  std::optional<MemberRecord> record = leases_.Find(role, id);
  if (!record.has_value() || static_cast<uint64_t>(record->incarnation) == incarnation) {
    return absl::OkStatus();
  }
  return error(absl::StrCat(MemberName(role, id), " incarnation ", incarnation,
                            " is no longer registered: the id was registered again (incarnation ",
                            record->incarnation, ")"));
}

absl::Status CoordinatorState::Leave(v1::MemberRole role, uint32_t id, int64_t final_clock,
                                     uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckIncarnationLocked(role, id, incarnation, absl::FailedPreconditionError));
  ASSIGN_OR_RETURN(MemberRecord record, leases_.Leave(role, id, final_clock));
  NoteReattachedLocked(role, id);
  RefreshMapLocked();
  PersistLocked();
  if (role == v1::MEMBER_ROLE_WORKER) {
    LOG_INFO("{} left at clock {}; map version {}", DescribeMember(record), record.clock,
             map_.version());
  } else {
    LOG_INFO("{} left; map version {}", DescribeMember(record), map_.version());
  }
  return absl::OkStatus();
}

void CoordinatorState::ForgiveStall(absl::Duration stalled) {
  absl::MutexLock lock(&mu_);
  LOG_WARN("the coordinator did not run for {} (the machine or the process stalled): every live "
           "member's lease is extended by {} rather than declared dead unheard",
           absl::FormatDuration(stalled), absl::FormatDuration(leases_.lease_timeout()));
  leases_.ExtendAll(time_->Now());
}

std::vector<MemberRecord> CoordinatorState::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = time_->Now();
  if (restoring_.waiting) {
    if (now < restoring_.restored_at + leases_.lease_timeout()) return {};
    LOG_WARN(
        "no member of the restored job {} (map version {}) re-attached within {}: its processes "
        "are gone; dropping the state stored in {} and starting a new job",
        job_.config_hash(), map_.version(), absl::FormatDuration(leases_.lease_timeout()),
        restoring_.where);
    DropRestoredLocked();
    return {};
  }
  std::vector<MemberRecord> expired = leases_.ExpireLeases(now);
  if (expired.empty()) {
    const uint64_t version = map_.version();
    ReplicateLocked(nullptr);  // groups whose rereplication_delay ran out
    BalancePrimariesLocked();
    if (map_.version() != version) PersistLocked();
    return expired;
  }
  for (const MemberRecord& record : expired) {
    restoring_.absent.erase({record.role, record.id});
    if (record.role == v1::MEMBER_ROLE_SERVER) pending_failovers_.erase(record.id);
  }
  FailOverLocked(expired);
  PersistLocked();
  return expired;
}

void CoordinatorState::FailOverLocked(const std::vector<MemberRecord>& expired) {
  std::vector<std::pair<GroupFailover, absl::Time>> done;  // with the dead lease's expiry
  if (!ready_ || map_.assignments().empty()) {
    RefreshMapLocked();
  } else {
    const std::set<uint32_t> alive = AliveServers(leases_.Snapshot());
    std::vector<v1::PartitionAssignment> assignments(map_.assignments().begin(),
                                                     map_.assignments().end());
    for (const MemberRecord& record : expired) {
      if (record.role != v1::MEMBER_ROLE_SERVER) continue;
      for (GroupFailover& f : FailOver(record.id, alive, &assignments)) {
        done.emplace_back(std::move(f), record.lease_expiry);
      }
    }
    RestoreLostGroupsLocked(&assignments);
    ReplicateLocked(&assignments);  // one version bump for failover and re-replication
  }
  for (const MemberRecord& record : expired) {
    LOG_WARN("{} lease expired: DEAD, last heard {} ago (map version {})", DescribeMember(record),
             absl::FormatDuration(time_->Now() - record.last_renewal), map_.version());
    if (metrics_ != nullptr) metrics_->CountLeaseExpiration(record.role);
  }
  for (const auto& [f, lease_expiry] : done) {
    if (f.promoted) {
      LOG_WARN("{}; map version {}", DescribeFailover(f), map_.version());
      if (metrics_ != nullptr) metrics_->CountFailover();
      pending_failovers_[f.new_primary] = PendingFailover{lease_expiry, map_.version()};
    } else {
      LOG_ERROR("{}; map version {}", DescribeFailover(f), map_.version());
    }
  }
}

v1::PartitionMap CoordinatorState::Map() const {
  absl::MutexLock lock(&mu_);
  return map_;
}

v1::PartitionMap CoordinatorState::WaitForMap(uint64_t known_version,
                                              absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, known_version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || job_state_ != v1::JOB_STATE_RUNNING || map_.version() > known_version;
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
  return ready_ && !restoring_.waiting;
}

bool CoordinatorState::restoring() const {
  absl::MutexLock lock(&mu_);
  return restoring_.waiting;
}

bool CoordinatorState::JobOver() const {
  absl::MutexLock lock(&mu_);
  if (!ready_ || restoring_.waiting) return false;
  for (const MemberRecord& m : leases_.Snapshot()) {
    if (m.role == v1::MEMBER_ROLE_WORKER && m.state == v1::MEMBER_STATE_ALIVE) return false;
  }
  return true;
}

absl::Status CoordinatorState::Persist() {
  absl::MutexLock lock(&mu_);
  if (store_ == nullptr || restoring_.waiting) return absl::OkStatus();
  return store_->Put(kStateKey, EncodeState({job_, map_, leases_.Snapshot()}));
}

absl::Status CoordinatorState::ForgetStored() {
  absl::MutexLock lock(&mu_);
  if (store_ == nullptr) return absl::OkStatus();
  return store_->Delete(kStateKey);
}

void CoordinatorState::PersistLocked() {
  if (store_ == nullptr || restoring_.waiting) return;
  absl::Status s = store_->Put(kStateKey, EncodeState({job_, map_, leases_.Snapshot()}));
  if (!s.ok()) {
    LOG_ERROR("cannot store the coordinator state (map version {}); a restart now would not "
              "resume it: {}",
              map_.version(), s.message());
  }
}

v1::JobSpec CoordinatorState::job() const {
  absl::MutexLock lock(&mu_);
  return job_;
}

uint32_t CoordinatorState::ReplicationLocked() const {
  return std::max<uint32_t>(job_.replication(), 1);
}

bool CoordinatorState::WaitUntilReady(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return (ready_ && !restoring_.waiting) || shutdown_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return ready_ && !restoring_.waiting;
}

CoordinatorState::Missing CoordinatorState::MissingMembers() const {
  absl::MutexLock lock(&mu_);
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

bool CoordinatorState::RefreshMapLocked(const std::vector<v1::PartitionAssignment>* frozen) {
  const std::vector<MemberRecord> members = leases_.Snapshot();
  const bool was_ready = ready_;
  if (!ready_ &&
      CountRole(members, v1::MEMBER_ROLE_SERVER) >= static_cast<int>(job_.num_servers()) &&
      CountRole(members, v1::MEMBER_ROLE_WORKER) >= static_cast<int>(job_.num_workers())) {
    ready_ = true;
  }
  std::vector<v1::PartitionAssignment> assignments =
      frozen != nullptr ? *frozen
                        : std::vector<v1::PartitionAssignment>(map_.assignments().begin(),
                                                               map_.assignments().end());
  const std::set<uint32_t> alive = AliveServers(members);
  // Before ready nobody holds state, so the placement follows the live
  // servers; from ready on it is frozen and changes only by failover
  // (moving a partition elsewhere needs a state transfer). An empty
  // placement (no server was alive at ready) is still free.
  if (!was_ready || assignments.empty()) {
    const std::vector<uint32_t> alive_servers(alive.begin(), alive.end());
    assignments = AssignRoundRobin(job_.num_partitions(), alive_servers, ReplicationLocked());
  }
  v1::PartitionMap next =
      BuildPartitionMap(map_.version(), job_.num_partitions(), assignments, members, ready_);
  if (!SameMapContent(next, map_)) next.set_version(map_.version() + 1);
  map_ = std::move(next);
  if (metrics_ != nullptr) {
    metrics_->SetMembers(members);
    metrics_->SetMapVersion(map_.version());
    metrics_->SetUnderReplicated(CountUnderReplicated(assignments, alive, ReplicationLocked()));
  }
  return ready_ && !was_ready;
}

absl::StatusOr<uint64_t> CoordinatorState::ReplicaReady(uint32_t server_id, uint32_t group) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::PartitionAssignment> assignments(map_.assignments().begin(),
                                                   map_.assignments().end());
  if (!PromoteJoiner(server_id, group, &assignments)) {
    bool backup = false;
    for (const v1::PartitionAssignment& a : assignments) {
      if (a.group() == group &&
          std::find(a.backups().begin(), a.backups().end(), server_id) != a.backups().end()) {
        backup = true;
      }
    }
    if (backup) return map_.version();  // a repeated report
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", server_id, " is not joining replica group ", group, " (map version ",
        map_.version(), ")"));
  }
  RefreshMapLocked(&assignments);
  PersistLocked();
  LOG_INFO("server {} holds replica group {} and backs it up now; map version {}", server_id,
           group, map_.version());
  return map_.version();
}

void CoordinatorState::ReplicateLocked(std::vector<v1::PartitionAssignment>* changed) {
  std::vector<v1::PartitionAssignment> assignments =
      changed != nullptr ? *changed
                         : std::vector<v1::PartitionAssignment>(map_.assignments().begin(),
                                                                map_.assignments().end());
  std::vector<std::pair<uint32_t, uint32_t>> added;
  if (ready_ && !assignments.empty()) {
    const std::set<uint32_t> alive = AliveServers(leases_.Snapshot());
    const absl::Time now = time_->Now();
    const absl::Duration delay = absl::Milliseconds(job_.rereplication_delay_ms());
    // When each group short of copies became short; a group waits `delay`
    // for an empty server before the others may take its copies.
    const std::set<uint32_t> short_groups = ShortGroups(alive, ReplicationLocked(), assignments);
    std::set<uint32_t> overdue;
    for (auto it = short_since_.begin(); it != short_since_.end();) {
      it = short_groups.contains(it->first) ? std::next(it) : short_since_.erase(it);
    }
    for (uint32_t g : short_groups) {
      const absl::Time since = short_since_.try_emplace(g, now).first->second;
      if (now - since >= delay) overdue.insert(g);
    }
    added = AssignJoiners(alive, ReplicationLocked(), overdue, &assignments);
    if (!added.empty()) {
      // A group still short (r > 2, one copy found) keeps its clock.
      const std::set<uint32_t> still_short = ShortGroups(alive, ReplicationLocked(), assignments);
      for (const auto& [group, server] : added) {
        if (!still_short.contains(group)) short_since_.erase(group);
      }
    }
  }
  if (added.empty() && changed == nullptr) return;
  RefreshMapLocked(&assignments);
  for (const auto& [group, server] : added) {
    LOG_INFO("server {} joins replica group {}: a backup once the primary sent it the group's "
             "state; map version {}",
             server, group, map_.version());
  }
}

void CoordinatorState::BalancePrimariesLocked() {
  if (!ready_ || map_.assignments().empty() || checkpoints_running_ > 0 ||
      job_state_ != v1::JOB_STATE_RUNNING || restoring_.waiting) {
    return;
  }
  const std::set<uint32_t> alive = AliveServers(leases_.Snapshot());
  for (const v1::PartitionAssignment& a : map_.assignments()) {
    if (a.joining_size() > 0 || !alive.contains(a.primary())) return;
  }
  std::vector<v1::PartitionAssignment> assignments(map_.assignments().begin(),
                                                   map_.assignments().end());
  const std::vector<PrimaryMove> moves = BalancePrimaries(alive, &assignments);
  if (moves.empty()) return;
  RefreshMapLocked(&assignments);
  for (const PrimaryMove& m : moves) {
    LOG_INFO("{}; map version {}", DescribePrimaryMove(m), map_.version());
    if (metrics_ != nullptr) metrics_->CountPrimaryMove();
  }
}

void CoordinatorState::CheckpointStarted() {
  absl::MutexLock lock(&mu_);
  ++checkpoints_running_;
}

void CoordinatorState::CheckpointEnded() {
  absl::MutexLock lock(&mu_);
  --checkpoints_running_;
}

void CoordinatorState::RestoreLostGroupsLocked(
    std::vector<v1::PartitionAssignment>* assignments) {
  const std::set<uint32_t> alive = AliveServers(leases_.Snapshot());
  std::set<uint32_t> lost;  // groups with no live copy
  for (const v1::PartitionAssignment& a : *assignments) {
    bool live = alive.contains(a.primary());
    for (uint32_t b : a.backups()) live |= alive.contains(b);
    if (!live) lost.insert(a.group());
  }
  if (lost.empty()) return;
  const std::optional<v1::CheckpointRecord> record =
      checkpoint_source_ ? checkpoint_source_() : std::nullopt;
  if (!record.has_value()) unrecoverable_groups_.insert(lost.begin(), lost.end());
  if (alive.empty()) return;  // with a checkpoint: restored onto the next server to come
  if (!record.has_value()) {
    LOG_ERROR("replica groups [{}] lost every copy and there is no complete checkpoint to "
              "restore them from: their partitions stay on dead servers",
              absl::StrJoin(lost, ", "));
    return;
  }
  std::map<uint32_t, int> load;
  for (uint32_t s : alive) load[s] = 0;
  for (const v1::PartitionAssignment& a : *assignments) {
    if (alive.contains(a.primary())) ++load[a.primary()];
  }
  const int64_t now_clock = MinLiveWorkerClockLocked(kMaxMemberId + 1);
  for (uint32_t group : lost) {
    uint32_t target = *alive.begin();
    for (const auto& [s, l] : load) {
      if (l < load[target]) target = s;
    }
    std::vector<uint32_t> partitions;
    for (v1::PartitionAssignment& a : *assignments) {
      if (a.group() != group) continue;
      a.set_primary(target);
      a.clear_backups();
      a.clear_joining();
      a.set_restore_record(record->id());
      partitions.push_back(a.partition());
      ++load[target];
    }
    const int64_t rolled_back = std::max<int64_t>(0, now_clock - record->clock());
    LOG_ERROR("replica group {} (partitions {}) lost every copy: restored onto server {} from "
              "the checkpoint at clock {} (record {}); updates of about {} clocks to these "
              "partitions are lost",
              group, absl::StrJoin(partitions, ","), target, record->clock(), record->id(),
              rolled_back);
    if (metrics_ != nullptr) metrics_->CountRestore(rolled_back);
  }
}

}  // namespace cairn
