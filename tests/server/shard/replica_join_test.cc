// A server joining two replica groups at once (what a server rejoining after
// it was declared dead does): the pushes forwarded to it while a transfer
// runs are applied once the copy is in, also when its map changed meanwhile
// (the other group's transfer finished first) and when its iteration
// boundary moved past them (the other group's clock ticks). Replicas end
// with the primary's bits.
#include <catch2/catch.hpp>
#include <cstring>

#include "common/bytes.h"
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

// One dense table "w" of 4 floats, one chunk each, over 4 partitions:
// chunk k is partition k. Group 0 holds partitions 0 and 2, group 1
// partitions 1 and 3; server 0 is primary of both, server 2 joins them.
v1::JobSpec JoinJob() {
  v1::TableSpec t = ScalarTable("w", v1::CONSISTENCY_BSP, v1::AGGREGATION_SUM);
  t.set_shape(0, 4);
  v1::JobSpec job = Job({t}, 4);
  job.set_replication(2);
  return job;
}

// Map `version`: joiners of group g in joining[g], backups in backups[g].
v1::PartitionMap GroupMap(uint64_t version, std::vector<std::vector<uint32_t>> joining,
                          std::vector<std::vector<uint32_t>> backups) {
  v1::PartitionMap map = Map(4, {0}, version, 0);
  for (v1::PartitionAssignment& a : *map.mutable_assignments()) {
    const uint32_t g = a.partition() % 2;
    a.set_group(g);
    for (uint32_t s : joining[g]) a.add_joining(s);
    for (uint32_t s : backups[g]) a.add_backups(s);
  }
  for (uint32_t id : {0u, 2u}) {
    v1::Member* m = map.add_servers();
    m->set_id(id);
    m->set_role(v1::MEMBER_ROLE_SERVER);
    m->set_state(v1::MEMBER_STATE_ALIVE);
    m->set_address("127.0.0.1:1");
  }
  return map;
}

// Worker 0's push of `grad` to chunk `key` (group key % 2) for `clock`.
v1::PushRequest PushKey(uint64_t version, uint64_t seq, int64_t clock, uint64_t key, float grad) {
  v1::PushRequest r = PushScalar(0, seq, clock, grad);
  r.set_map_version(version);
  r.set_group(static_cast<uint32_t>(key % 2));
  r.mutable_tables(0)->set_keys(KeysToBytes({key}));
  r.mutable_tables(0)->set_shape(0, 4);  // the table's shape
  return r;
}

v1::ClockRequest TickAt(uint64_t version, int64_t clock) {
  v1::ClockRequest r = Tick(0, clock);
  r.set_map_version(version);
  return r;
}

// Sends `chunks` (ExportGroup's) to `joiner`; returns the last answer.
absl::StatusOr<bool> Deliver(Shard& joiner, std::vector<v1::ReplicaChunk> chunks) {
  absl::StatusOr<bool> done = false;
  for (v1::ReplicaChunk& c : chunks) {
    c.set_transfer_id(1);
    c.set_primary(0);
    done = joiner.ReceiveReplica(c);
    if (!done.ok()) return done;
  }
  return done;
}

std::vector<float> Values(Shard& shard, uint64_t version) {
  PullResult pull;
  pull.request.set_map_version(version);
  pull.request.set_worker_id(0);
  pull.request.set_clock(0);
  v1::TableKeys* tk = pull.request.add_tables();
  tk->set_table_id(0);
  tk->set_table("w");
  tk->set_keys(KeysToBytes({0, 1, 2, 3}));
  shard.Pull(&pull.request, &pull.response, absl::InfiniteFuture(), [&pull](absl::Status s) {
    pull.status = s;
    pull.done = true;
  });
  REQUIRE(pull.done);
  REQUIRE(pull.status.ok());
  std::vector<float> out(4);
  std::memcpy(out.data(), pull.response.tables(0).values().data(), 4 * sizeof(float));
  return out;
}

TEST_CASE("a server joining two groups applies the pushes held during the second transfer, "
          "after its map and its boundary moved on",
          "[shard][failover]") {
  const v1::JobSpec job = JoinJob();
  Shard primary(0, job, nullptr);
  Shard joiner(2, job, nullptr);
  REQUIRE(primary.InstallMap(GroupMap(1, {{}, {}}, {{}, {}})).ok());
  // Iteration 0 on the primary alone: every chunk gets -1.
  for (uint64_t k = 0; k < 4; ++k) REQUIRE(primary.Push(PushKey(1, k / 2 + 1, 0, k, 1)).ok());
  REQUIRE(primary.Clock(TickAt(1, 1)).ok());

  // Map 2: server 2 joins both groups; the primary copies them now.
  const v1::PartitionMap joining = GroupMap(2, {{2}, {2}}, {{}, {}});
  REQUIRE(primary.InstallMap(joining).ok());
  REQUIRE(joiner.InstallMap(joining).ok());
  auto group0 = primary.ExportGroup(0, 2);
  auto group1 = primary.ExportGroup(1, 2);
  REQUIRE(group0.ok());
  REQUIRE(group1.ok());

  // Iteration 1: a push to each group, applied by the primary and forwarded
  // (map version 2) to the joiner, which holds them.
  for (uint64_t k : {0u, 1u}) {
    v1::PushRequest push = PushKey(2, 3, 1, k, 2);
    REQUIRE(primary.Push(push).ok());
    push.set_forwarded(true);
    REQUIRE(joiner.Push(push).ok());
  }
  // Group 0's transfer ends first; the coordinator makes server 2 its
  // backup (map 3), and the joiner closes iteration 1 on group 0's clock.
  const std::vector<v1::ReplicaChunk> resent = *group0;
  auto done0 = Deliver(joiner, *std::move(group0));
  REQUIRE(done0.ok());
  CHECK(*done0);
  // The same transfer again (its end's answer was lost, the primary resends):
  // the joiner says it holds the group already and changes nothing.
  auto again = Deliver(joiner, resent);
  CHECK(absl::IsAlreadyExists(again.status()));
  const v1::PartitionMap backup0 = GroupMap(3, {{}, {2}}, {{2}, {}});
  REQUIRE(joiner.InstallMap(backup0).ok());
  REQUIRE(primary.InstallMap(backup0).ok());
  REQUIRE(joiner.Clock(TickAt(3, 2)).ok());
  REQUIRE(primary.Clock(TickAt(3, 2)).ok());

  // Group 1's transfer ends now: its held push (map 2, iteration 1) is
  // older than the joiner's map and its iteration is closed there; it must
  // be applied all the same.
  auto done1 = Deliver(joiner, *std::move(group1));
  REQUIRE(done1.ok());
  CHECK(*done1);
  const v1::PartitionMap backups = GroupMap(4, {{}, {}}, {{2}, {2}});
  REQUIRE(joiner.InstallMap(backups).ok());
  REQUIRE(primary.InstallMap(backups).ok());

  const std::vector<float> want = {-3, -3, -1, -1};
  CHECK(Values(primary, 4) == want);
  CHECK(Values(joiner, 4) == want);
}

}  // namespace
}  // namespace cairn
