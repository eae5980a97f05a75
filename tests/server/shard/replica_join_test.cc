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
                          std::vector<std::vector<uint32_t>> backups,
                          std::vector<uint32_t> workers = {0}) {
  v1::PartitionMap map = Map(4, workers, version, 0);
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

// Worker `worker`'s push of `grad` to chunk `key` (group key % 2) for `clock`.
v1::PushRequest PushKey(uint64_t version, uint64_t seq, int64_t clock, uint64_t key, float grad,
                        uint32_t worker = 0) {
  v1::PushRequest r = PushScalar(worker, seq, clock, grad);
  r.set_map_version(version);
  r.set_group(static_cast<uint32_t>(key % 2));
  r.mutable_tables(0)->set_keys(KeysToBytes({key}));
  r.mutable_tables(0)->set_shape(0, 4);  // the table's shape
  return r;
}

v1::ClockRequest TickAt(uint64_t version, int64_t clock, uint32_t worker = 0) {
  v1::ClockRequest r = Tick(worker, clock);
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

TEST_CASE("a transfer in the middle of a BSP iteration carries its running sum: the joiner "
          "closes it to the primary's bits, and refuses a running sum tagged wrong",
          "[shard][failover][bsp]") {
  v1::JobSpec job = JoinJob();
  job.mutable_tables(0)->set_aggregation(v1::AGGREGATION_MEAN);
  Shard primary(0, job, nullptr);
  Shard joiner(2, job, nullptr);
  const std::vector<uint32_t> workers = {0, 1, 2};
  const v1::PartitionMap joining = GroupMap(1, {{2}, {2}}, {{}, {}}, workers);
  REQUIRE(primary.InstallMap(joining).ok());
  REQUIRE(joiner.InstallMap(joining).ok());
  // Iteration 0, before the copy: workers 0 and 1's first gradients of
  // chunk 0 (in the running sum), worker 0's second one (waiting), worker
  // 2's (waiting). Magnitudes far apart: another order rounds otherwise.
  uint64_t seq[3] = {0, 0, 0};
  REQUIRE(primary.Push(PushKey(1, ++seq[1], 0, 0, 1e-3f, 1)).ok());
  REQUIRE(primary.Push(PushKey(1, ++seq[0], 0, 0, 1e7f, 0)).ok());
  REQUIRE(primary.Push(PushKey(1, ++seq[2], 0, 0, 3.0f, 2)).ok());
  REQUIRE(primary.Push(PushKey(1, ++seq[0], 0, 0, -1e7f, 0)).ok());
  auto group0 = primary.ExportGroup(0, 2);
  REQUIRE(group0.ok());

  // A running sum whose first_of names worker 2 is refused, naming it.
  std::vector<v1::ReplicaChunk> bad = *group0;
  bool tampered = false;
  for (v1::ReplicaChunk& c : bad) {
    if (!c.has_end()) continue;
    for (v1::PendingGradients& pg : *c.mutable_end()->mutable_pending()) {
      if (!pg.running_sum()) continue;
      pg.set_first_of(std::string(pg.first_of().size(), '\x04'));
      tampered = true;
    }
  }
  REQUIRE(tampered);
  Shard refuser(2, job, nullptr);
  REQUIRE(refuser.InstallMap(joining).ok());
  absl::StatusOr<bool> refused = Deliver(refuser, bad);
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("first_of"));

  auto done = Deliver(joiner, *std::move(group0));
  REQUIRE(done.ok());
  CHECK(*done);
  // After the copy, worker 1 sends a second gradient of chunk 0, worker 2
  // one more: both servers get them (the primary forwards), then every
  // worker ticks.
  for (auto [worker, grad] : {std::pair<uint32_t, float>{1, 0.7f}, {2, -2.0f}}) {
    v1::PushRequest push = PushKey(1, ++seq[worker], 0, 0, grad, worker);
    REQUIRE(primary.Push(push).ok());
    push.set_forwarded(true);
    REQUIRE(joiner.Push(push).ok());
  }
  for (uint32_t w : workers) {
    REQUIRE(primary.Clock(TickAt(1, 1, w)).ok());
    REQUIRE(joiner.Clock(TickAt(1, 1, w)).ok());
  }
  // (1e7 + 1e-3) + -1e7 + 0.7 + (3 - 2), the mean over 3 workers, SGD from 0.
  const float sum = (((1e7f + 1e-3f) + -1e7f) + 0.7f) + (3.0f + -2.0f);
  const float want = 0.0f - 1.0f * (sum * (1.0f / 3.0f));
  const std::vector<float> got_primary = Values(primary, 1);
  const std::vector<float> got_joiner = Values(joiner, 1);
  CHECK(got_primary[0] == want);
  CHECK(std::memcmp(got_primary.data(), got_joiner.data(), sizeof(float)) == 0);
}

}  // namespace
}  // namespace cairn
