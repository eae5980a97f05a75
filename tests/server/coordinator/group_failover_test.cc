// Failover of replica groups as pure functions (server/coordinator/failover.h):
// promotion of the first live backup, removal of the dead server from every
// backups list, groups kept whole, and the under-replicated count.
#include "server/coordinator/failover.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "server/coordinator/partition_map_builder.h"

namespace cairn {
namespace {

std::vector<uint32_t> Backups(const v1::PartitionAssignment& a) {
  return {a.backups().begin(), a.backups().end()};
}

TEST_CASE("a dead primary's group gets its first live backup as primary, all partitions alike",
          "[coordinator][failover]") {
  // 3 servers, r = 2, 6 partitions: group 0 = {0, 3} backup 1, group 1 = {1, 4}
  // backup 2, group 2 = {2, 5} backup 0.
  std::vector<v1::PartitionAssignment> a = AssignRoundRobin(6, std::vector<uint32_t>{0, 1, 2}, 2);
  const std::vector<GroupFailover> done = FailOver(1, {0, 2}, &a);
  REQUIRE(done.size() == 1);
  CHECK(done[0].group == 1);
  CHECK(done[0].dead == 1);
  CHECK(done[0].promoted);
  CHECK(done[0].new_primary == 2);
  CHECK(done[0].partitions == std::vector<uint32_t>{1, 4});
  CHECK(DescribeFailover(done[0]) ==
        "group 1 (partitions 1,4): server 1 DEAD, server 2 promoted to primary");
  for (uint32_t p : {1u, 4u}) {
    CHECK(a[p].primary() == 2);
    CHECK(a[p].group() == 1);  // the group keeps its name
    CHECK(Backups(a[p]).empty());
  }
  // Group 0 had server 1 as its backup: removed, primary unchanged.
  for (uint32_t p : {0u, 3u}) {
    CHECK(a[p].primary() == 0);
    CHECK(Backups(a[p]).empty());
  }
  for (uint32_t p : {2u, 5u}) {
    CHECK(a[p].primary() == 2);
    CHECK(Backups(a[p]) == std::vector<uint32_t>{0});
  }
  // Partitions whose live copies are now fewer than 2: groups 0 and 1.
  CHECK(CountUnderReplicated(a, {0, 2}, 2) == 4);
}

TEST_CASE("a dead backup is skipped: the first ALIVE one is promoted", "[coordinator][failover]") {
  std::vector<v1::PartitionAssignment> a =
      AssignRoundRobin(4, std::vector<uint32_t>{0, 1, 2, 3}, 3);  // group 0 backups 1, 2
  // Servers 0 and 1 died in the same round: 1 is no longer alive.
  std::vector<GroupFailover> done = FailOver(0, {2, 3}, &a);
  REQUIRE(done.size() == 1);
  CHECK(done[0].new_primary == 2);
  CHECK(a[0].primary() == 2);
  CHECK(Backups(a[0]) == std::vector<uint32_t>{1});
  done = FailOver(1, {2, 3}, &a);
  REQUIRE(done.size() == 1);  // group 1 (backups 2, 3): 2 promoted
  CHECK(done[0].group == 1);
  CHECK(done[0].new_primary == 2);
  CHECK(Backups(a[0]).empty());
  CHECK(Backups(a[1]) == std::vector<uint32_t>{3});
  CHECK(Backups(a[2]) == std::vector<uint32_t>{3});  // group 2 had backups 3, 0
  CHECK(Backups(a[3]).empty());                      // group 3 had backups 0, 1
  CHECK(CountUnderReplicated(a, {2, 3}, 3) == 4);
}

TEST_CASE("with no live backup (replication 1) the partitions stay on the dead primary",
          "[coordinator][failover]") {
  std::vector<v1::PartitionAssignment> a = AssignRoundRobin(4, std::vector<uint32_t>{0, 1}, 1);
  const std::vector<v1::PartitionAssignment> before = a;
  CHECK(CountUnderReplicated(a, {0, 1}, 1) == 0);
  const std::vector<GroupFailover> done = FailOver(1, {0}, &a);
  REQUIRE(done.size() == 1);
  CHECK_FALSE(done[0].promoted);
  CHECK(done[0].partitions == std::vector<uint32_t>{1, 3});
  CHECK(DescribeFailover(done[0]) ==
        "group 1 (partitions 1,3): server 1 DEAD, no live backup: its partitions stay on the "
        "dead server");
  for (size_t p = 0; p < a.size(); ++p) CHECK(a[p].primary() == before[p].primary());
  CHECK(CountUnderReplicated(a, {0}, 1) == 2);
}

TEST_CASE("a server that is primary of nothing changes only backups lists",
          "[coordinator][failover]") {
  std::vector<v1::PartitionAssignment> a = AssignRoundRobin(2, std::vector<uint32_t>{0, 1}, 2);
  CHECK(FailOver(7, {0, 1}, &a).empty());
  CHECK(Backups(a[0]) == std::vector<uint32_t>{1});
  CHECK(CountUnderReplicated(a, {0, 1}, 2) == 0);
}

TEST_CASE("a short group takes an empty server at once and a busy one only once overdue",
          "[coordinator][failover]") {
  // 3 servers, r = 2; server 1 dies: groups 0 (lost backup 1) and 1 (primary
  // 1, backup 2 promoted) are short, group 2 (2, backup 0) is not.
  std::vector<v1::PartitionAssignment> a = AssignRoundRobin(6, std::vector<uint32_t>{0, 1, 2}, 2);
  FailOver(1, {0, 2}, &a);
  CHECK(ShortGroups({0, 2}, 2, a) == std::set<uint32_t>{0, 1});
  // Within rereplication_delay the survivors, which hold groups, wait.
  std::vector<v1::PartitionAssignment> waiting = a;
  CHECK(AssignJoiners({0, 2}, 2, {}, &waiting).empty());
  // Server 3 registers empty (a replacement, or server 1 rejoining under a
  // new id): it takes both copies at once.
  std::vector<v1::PartitionAssignment> rejoined = a;
  const auto added = AssignJoiners({0, 2, 3}, 2, {}, &rejoined);
  CHECK(added == std::vector<std::pair<uint32_t, uint32_t>>{{0, 3}, {1, 3}});
  for (uint32_t p : {0u, 1u, 3u, 4u}) {
    REQUIRE(rejoined[p].joining_size() == 1);
    CHECK(rejoined[p].joining(0) == 3);
  }
  CHECK(ShortGroups({0, 2, 3}, 2, rejoined).empty());
  // Once a group is overdue, the least loaded survivor takes it.
  std::vector<v1::PartitionAssignment> overdue = a;
  const auto late = AssignJoiners({0, 2}, 2, {0}, &overdue);
  CHECK(late == std::vector<std::pair<uint32_t, uint32_t>>{{0, 2}});
  CHECK(ShortGroups({0, 2}, 2, overdue) == std::set<uint32_t>{1});
}


// Fails server `dead` over, then lets `joiner` join every short group and
// report each ready: the map a failover and one rejoin leave.
void FailOverAndRejoin(uint32_t dead, uint32_t joiner, std::set<uint32_t> alive,
                       std::vector<v1::PartitionAssignment>* a) {
  FailOver(dead, alive, a);
  alive.insert(joiner);
  const auto added = AssignJoiners(alive, 2, {}, a);
  for (const auto& [group, server] : added) REQUIRE(PromoteJoiner(server, group, a));
}

TEST_CASE("after a failover and a rejoin one group's primary moves to the rejoined server",
          "[coordinator][failover]") {
  // 2 servers, r = 2: group 0 = {0, 2, 4} backup 1, group 1 = {1, 3, 5}
  // backup 0. Server 1 dies (server 0 primary of both), server 2 joins both.
  std::vector<v1::PartitionAssignment> a = AssignRoundRobin(6, std::vector<uint32_t>{0, 1}, 2);
  FailOverAndRejoin(1, 2, {0}, &a);
  for (const auto& p : a) {
    REQUIRE(p.primary() == 0);
    REQUIRE(Backups(p) == std::vector<uint32_t>{2});
  }
  const std::vector<PrimaryMove> moves = BalancePrimaries({0, 2}, &a);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].group == 0);  // ties: the lower group id
  CHECK(moves[0].from == 0);
  CHECK(moves[0].to == 2);
  CHECK(moves[0].partitions == std::vector<uint32_t>{0, 2, 4});
  CHECK(DescribePrimaryMove(moves[0]) ==
        "group 0 (partitions 0,2,4): server 2 promoted to primary in place of server 0, which "
        "backs it up now (primaries balanced: server 0 held 2 groups, server 2 none)");
  for (uint32_t p : {0u, 2u, 4u}) {
    CHECK(a[p].primary() == 2);
    CHECK(Backups(a[p]) == std::vector<uint32_t>{0});  // the roles swap, both copies stay
  }
  for (uint32_t p : {1u, 3u, 5u}) {
    CHECK(a[p].primary() == 0);
    CHECK(Backups(a[p]) == std::vector<uint32_t>{2});
  }
  CHECK(CountUnderReplicated(a, {0, 2}, 2) == 0);
  // Balanced now (one group each): nothing more moves.
  CHECK(BalancePrimaries({0, 2}, &a).empty());
}

TEST_CASE("primaries even out to within one group, the most loaded giving first, each group "
          "moving at most once",
          "[coordinator][failover]") {
  // 4 servers, r = 2; groups g = 0..3, backup g + 1 (mod 4). Server 3 is
  // primary of groups 1, 2 and 3 and server 0 of group 0; server 1 backs up
  // groups 1 and 3, server 2 group 2.
  std::vector<v1::PartitionAssignment> a =
      AssignRoundRobin(8, std::vector<uint32_t>{0, 1, 2, 3}, 2);
  auto set = [&a](uint32_t group, uint32_t primary, uint32_t backup) {
    for (auto& p : a) {
      if (p.group() != group) continue;
      p.set_primary(primary);
      p.clear_backups();
      p.add_backups(backup);
    }
  };
  set(0, 0, 1);
  set(1, 3, 1);
  set(2, 3, 2);
  set(3, 3, 1);
  const std::vector<PrimaryMove> moves = BalancePrimaries({0, 1, 2, 3}, &a);
  // Server 3 (3 groups) gives group 1 to server 1 (0 groups), then group 2
  // to server 2 (0): 1, 1, 1, 1.
  REQUIRE(moves.size() == 2);
  CHECK(moves[0].group == 1);
  CHECK(moves[0].to == 1);
  CHECK(moves[1].group == 2);
  CHECK(moves[1].to == 2);
  std::map<uint32_t, int> primaries;
  for (const auto& p : a) primaries[p.primary()] += 1;
  CHECK(primaries == std::map<uint32_t, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}});

  // A backup one group lighter than its primary takes nothing (it would
  // only swap the imbalance), and a dead backup takes nothing.
  set(0, 0, 1);
  set(1, 0, 1);
  set(2, 1, 3);
  set(3, 3, 0);
  CHECK(BalancePrimaries({0, 1, 2, 3}, &a).empty());  // 2, 1, 0, 1: server 2 backs up nothing
  for (uint32_t g : {0u, 1u}) set(g, 0, 2);
  for (uint32_t g : {2u, 3u}) set(g, 3, 2);
  CHECK(BalancePrimaries({0, 1, 3}, &a).empty());  // 2, 0, -, 2: the only backup is dead
}

}  // namespace
}  // namespace cairn
