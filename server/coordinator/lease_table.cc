#include "server/coordinator/lease_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cairn {

std::string MemberName(v1::MemberRole role, uint32_t id) {
  return absl::StrCat(RoleName(role), " ", id);
}


LeaseTable::LeaseTable(absl::Duration lease_timeout) : lease_timeout_(lease_timeout) {}

absl::StatusOr<MemberRecord> LeaseTable::Register(const RegisterArgs& args, absl::Time now) {
  if (args.role != v1::MEMBER_ROLE_SERVER && args.role != v1::MEMBER_ROLE_WORKER) {
    return absl::InvalidArgumentError("register: role must be server or worker");
  }
  if (args.requested_id < -1 || args.requested_id > static_cast<int64_t>(kMaxMemberId)) {
    return absl::InvalidArgumentError(absl::StrCat("register ", RoleName(args.role),
                                                   ": requested_id ", args.requested_id,
                                                   " is outside -1..", kMaxMemberId));
  }
  absl::MutexLock lock(&mu_);
  uint32_t id = 0;
  if (args.requested_id >= 0) {
    id = static_cast<uint32_t>(args.requested_id);
  } else {
    // The smallest id of this role never used; ids are dense from 0 when
    // nobody requests one explicitly.
    while (members_.count({args.role, id}) != 0) ++id;
  }
  auto it = members_.find({args.role, id});
  if (it != members_.end() && it->second.state == v1::MEMBER_STATE_ALIVE) {
    const MemberRecord& holder = it->second;
    return absl::AlreadyExistsError(absl::StrCat(
        MemberName(args.role, id), " is already registered and alive",
        holder.address.empty() ? "" : absl::StrCat(" at ", holder.address),
        "; its lease expires in ", absl::FormatDuration(holder.lease_expiry - now),
        ", after which a replacement may register with this id"));
  }
  MemberRecord& record = members_[{args.role, id}];
  record.role = args.role;
  record.id = id;
  record.state = v1::MEMBER_STATE_ALIVE;
  record.address = args.address;
  record.metrics_address = args.metrics_address;
  record.last_renewal = now;
  record.lease_expiry = now + lease_timeout_;
  record.start_clock = args.start_clock;
  record.clock = args.start_clock;
  record.incarnation += 1;
  return record;
}

absl::StatusOr<MemberRecord> LeaseTable::Renew(v1::MemberRole role, uint32_t id, int64_t clock,
                                               absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find({role, id});
  if (it == members_.end()) {
    return absl::NotFoundError(
        absl::StrCat("heartbeat: ", MemberName(role, id), " is not registered; register first"));
  }
  MemberRecord& record = it->second;
  if (record.state != v1::MEMBER_STATE_ALIVE) {
    return absl::NotFoundError(absl::StrCat("heartbeat: ", MemberName(role, id), " is ",
                                            StateName(record.state), "; register again"));
  }
  record.last_renewal = now;
  record.lease_expiry = now + lease_timeout_;
  if (role == v1::MEMBER_ROLE_WORKER && clock >= 0) record.clock = clock;
  return record;
}

absl::StatusOr<MemberRecord> LeaseTable::Leave(v1::MemberRole role, uint32_t id,
                                               int64_t final_clock) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find({role, id});
  if (it == members_.end()) {
    return absl::NotFoundError(
        absl::StrCat("leave: ", MemberName(role, id), " is not registered"));
  }
  MemberRecord& record = it->second;
  record.state = v1::MEMBER_STATE_LEFT;
  if (role == v1::MEMBER_ROLE_WORKER && final_clock >= 0) record.clock = final_clock;
  return record;
}

std::vector<MemberRecord> LeaseTable::ExpireLeases(absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<MemberRecord> expired;
  for (auto& [key, record] : members_) {
    if (record.state == v1::MEMBER_STATE_ALIVE && record.lease_expiry <= now) {
      record.state = v1::MEMBER_STATE_DEAD;
      expired.push_back(record);
    }
  }
  return expired;
}

void LeaseTable::ExtendAll(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (auto& [key, record] : members_) {
    if (record.state == v1::MEMBER_STATE_ALIVE) {
      record.lease_expiry = std::max(record.lease_expiry, now + lease_timeout_);
    }
  }
}

void LeaseTable::Restore(const std::vector<MemberRecord>& records, absl::Time now) {
  absl::MutexLock lock(&mu_);
  members_.clear();
  for (MemberRecord record : records) {
    if (record.state == v1::MEMBER_STATE_ALIVE) {
      record.last_renewal = now;
      record.lease_expiry = now + lease_timeout_;
    }
    members_[{record.role, record.id}] = std::move(record);
  }
}

std::vector<MemberRecord> LeaseTable::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<MemberRecord> out;
  out.reserve(members_.size());
  for (const auto& [key, record] : members_) out.push_back(record);
  return out;
}

std::optional<MemberRecord> LeaseTable::Find(v1::MemberRole role, uint32_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = members_.find({role, id});
  if (it == members_.end()) return std::nullopt;
  return it->second;
}

}  // namespace cairn
