// Round-robin placement and the map's member lists.
#include "server/coordinator/partition_map_builder.h"

#include <algorithm>
#include <map>

#include <catch2/catch.hpp>

namespace cairn {
namespace {

TEST_CASE("round-robin gives every partition exactly one primary, balanced",
          "[coordinator][map]") {
  const uint32_t num_servers = GENERATE(1u, 2u, 3u, 7u);
  const uint32_t num_partitions = GENERATE(1u, 8u, 64u);
  // Server ids need not be dense: 0, 2, 4, ...
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < num_servers; ++i) ids.push_back(2 * i);
  CAPTURE(num_servers, num_partitions);

  const std::vector<v1::PartitionAssignment> assignments =
      AssignRoundRobin(num_partitions, ids);
  REQUIRE(assignments.size() == num_partitions);
  std::map<uint32_t, uint32_t> owned;
  for (uint32_t p = 0; p < num_partitions; ++p) {
    CHECK(assignments[p].partition() == p);
    CHECK(assignments[p].primary() == ids[p % num_servers]);
    CHECK(assignments[p].backups().empty());
    CHECK(assignments[p].group() == assignments[p].primary());
    ++owned[assignments[p].primary()];
  }
  // Balanced: each server owns floor(P/n) or ceil(P/n) partitions.
  for (uint32_t id : ids) {
    const uint32_t count = owned.count(id) ? owned[id] : 0;
    CHECK(count >= num_partitions / num_servers);
    CHECK(count <= (num_partitions + num_servers - 1) / num_servers);
  }
}

TEST_CASE("8 partitions on 3 servers, by hand", "[coordinator][map]") {
  const std::vector<uint32_t> ids = {0, 1, 2};
  const std::vector<v1::PartitionAssignment> assignments = AssignRoundRobin(8, ids);
  std::vector<uint32_t> primaries;
  for (const auto& a : assignments) primaries.push_back(a.primary());
  CHECK(primaries == std::vector<uint32_t>{0, 1, 2, 0, 1, 2, 0, 1});
}

TEST_CASE("replica groups: each partition's group is its first server, backups the next r-1 "
          "servers cyclically, shared by the whole group",
          "[coordinator][map][replication]") {
  // Server ids need not be dense.
  const std::vector<uint32_t> ids = {1, 4, 6};
  const std::vector<v1::PartitionAssignment> a = AssignRoundRobin(7, ids, /*replication=*/2);
  REQUIRE(a.size() == 7);
  const std::vector<std::vector<uint32_t>> backups_of_group = {{4}, {6}, {1}};  // of 1, 4, 6
  for (uint32_t p = 0; p < 7; ++p) {
    CAPTURE(p);
    CHECK(a[p].primary() == ids[p % 3]);
    CHECK(a[p].group() == ids[p % 3]);
    CHECK(std::vector<uint32_t>(a[p].backups().begin(), a[p].backups().end()) ==
          backups_of_group[p % 3]);
  }
  const std::vector<v1::PartitionAssignment> three = AssignRoundRobin(4, ids, 3);
  CHECK(std::vector<uint32_t>(three[2].backups().begin(), three[2].backups().end()) ==
        std::vector<uint32_t>{1, 4});  // group 6: then 1, then 4
  CHECK(std::vector<uint32_t>(three[3].backups().begin(), three[3].backups().end()) ==
        std::vector<uint32_t>{4, 6});
}

TEST_CASE("replication 1 has no backups, more copies than servers stop at the servers there are",
          "[coordinator][map][replication]") {
  const std::vector<uint32_t> ids = {0, 1};
  for (const v1::PartitionAssignment& a : AssignRoundRobin(4, ids, 1)) {
    CHECK(a.backups().empty());
    CHECK(a.group() == a.primary());
  }
  // Before the start-up barrier fewer servers than r may be up.
  for (const v1::PartitionAssignment& a : AssignRoundRobin(4, ids, 3)) {
    REQUIRE(a.backups_size() == 1);
    CHECK(a.backups(0) != a.primary());
  }
  for (const v1::PartitionAssignment& a : AssignRoundRobin(3, std::vector<uint32_t>{5}, 2)) {
    CHECK(a.primary() == 5);
    CHECK(a.backups().empty());
  }
}

TEST_CASE("no servers, no assignment", "[coordinator][map]") {
  CHECK(AssignRoundRobin(64, {}).empty());
}

MemberRecord Record(v1::MemberRole role, uint32_t id, v1::MemberState state) {
  MemberRecord record;
  record.role = role;
  record.id = id;
  record.state = state;
  record.address = role == v1::MEMBER_ROLE_SERVER ? "127.0.0.1:" + std::to_string(7000 + id) : "";
  record.last_renewal = absl::FromUnixSeconds(100);
  record.start_clock = id;
  return record;
}

TEST_CASE("the map lists every server with its state but only live workers",
          "[coordinator][map]") {
  const std::vector<MemberRecord> members = {
      Record(v1::MEMBER_ROLE_SERVER, 0, v1::MEMBER_STATE_ALIVE),
      Record(v1::MEMBER_ROLE_SERVER, 1, v1::MEMBER_STATE_DEAD),
      Record(v1::MEMBER_ROLE_WORKER, 0, v1::MEMBER_STATE_ALIVE),
      Record(v1::MEMBER_ROLE_WORKER, 1, v1::MEMBER_STATE_DEAD),
      Record(v1::MEMBER_ROLE_WORKER, 2, v1::MEMBER_STATE_LEFT),
      Record(v1::MEMBER_ROLE_WORKER, 3, v1::MEMBER_STATE_ALIVE),
  };
  const std::vector<uint32_t> ids = {0, 1};
  const v1::PartitionMap map =
      BuildPartitionMap(5, 4, AssignRoundRobin(4, ids), members, /*ready=*/true);
  CHECK(map.version() == 5);
  CHECK(map.num_partitions() == 4);
  CHECK(map.assignments_size() == 4);
  CHECK(map.ready());
  REQUIRE(map.servers_size() == 2);
  CHECK(map.servers(1).id() == 1);
  CHECK(map.servers(1).state() == v1::MEMBER_STATE_DEAD);
  CHECK(map.servers(1).address() == "127.0.0.1:7001");
  REQUIRE(map.workers_size() == 2);
  CHECK(map.workers(0).id() == 0);
  CHECK(map.workers(1).id() == 3);
  CHECK(map.workers(1).start_clock() == 3);
  CHECK(map.workers(1).lease_age_ms() == 0);  // maps carry no time-dependent fields
}

TEST_CASE("member protos carry the lease age in milliseconds", "[coordinator][map]") {
  const MemberRecord record = Record(v1::MEMBER_ROLE_SERVER, 2, v1::MEMBER_STATE_ALIVE);
  const v1::Member member =
      ToMemberProto(record, absl::FromUnixSeconds(100) + absl::Milliseconds(1250));
  CHECK(member.lease_age_ms() == 1250);
  CHECK(member.role() == v1::MEMBER_ROLE_SERVER);
  CHECK(member.id() == 2);
}

TEST_CASE("map content comparison ignores the version only", "[coordinator][map]") {
  v1::PartitionMap a = BuildPartitionMap(1, 8, {}, {}, false);
  v1::PartitionMap b = BuildPartitionMap(9, 8, {}, {}, false);
  CHECK(SameMapContent(a, b));
  b.set_ready(true);
  CHECK_FALSE(SameMapContent(a, b));
}

}  // namespace
}  // namespace cairn
