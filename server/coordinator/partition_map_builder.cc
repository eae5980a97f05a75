#include "server/coordinator/partition_map_builder.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

namespace cairn {

std::vector<v1::PartitionAssignment> AssignRoundRobin(uint32_t num_partitions,
                                                      absl::Span<const uint32_t> server_ids,
                                                      uint32_t replication) {
  std::vector<v1::PartitionAssignment> out;
  if (server_ids.empty()) return out;
  const size_t n = server_ids.size();
  const size_t copies = std::min<size_t>(std::max<uint32_t>(replication, 1), n);
  out.reserve(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) {
    const size_t i = p % n;
    v1::PartitionAssignment assignment;
    assignment.set_partition(p);
    assignment.set_primary(server_ids[i]);
    assignment.set_group(server_ids[i]);
    for (size_t k = 1; k < copies; ++k) assignment.add_backups(server_ids[(i + k) % n]);
    out.push_back(std::move(assignment));
  }
  return out;
}

v1::Member ToMemberProto(const MemberRecord& record, absl::Time now) {
  v1::Member member;
  member.set_id(record.id);
  member.set_role(record.role);
  member.set_state(record.state);
  member.set_address(record.address);
  member.set_metrics_address(record.metrics_address);
  if (now != absl::InfinitePast()) {
    member.set_lease_age_ms(absl::ToInt64Milliseconds(now - record.last_renewal));
  }
  member.set_start_clock(record.start_clock);
  member.set_incarnation(static_cast<uint64_t>(record.incarnation));
  return member;
}

v1::PartitionMap BuildPartitionMap(uint64_t version, uint32_t num_partitions,
                                   const std::vector<v1::PartitionAssignment>& assignments,
                                   absl::Span<const MemberRecord> members, bool ready) {
  v1::PartitionMap map;
  map.set_version(version);
  map.set_num_partitions(num_partitions);
  for (const v1::PartitionAssignment& assignment : assignments) {
    *map.add_assignments() = assignment;
  }
  for (const MemberRecord& record : members) {
    if (record.role == v1::MEMBER_ROLE_SERVER) {
      *map.add_servers() = ToMemberProto(record);
    } else if (record.role == v1::MEMBER_ROLE_WORKER &&
               record.state == v1::MEMBER_STATE_ALIVE) {
      *map.add_workers() = ToMemberProto(record);
    }
  }
  map.set_ready(ready);
  return map;
}

bool SameMapContent(const v1::PartitionMap& a, const v1::PartitionMap& b) {
  v1::PartitionMap a_copy = a;
  a_copy.set_version(b.version());
  return google::protobuf::util::MessageDifferencer::Equals(a_copy, b);
}

}  // namespace cairn
