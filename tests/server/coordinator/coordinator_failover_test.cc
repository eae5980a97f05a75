// CoordinatorState with replication: replica groups at the start-up barrier,
// promotion of a backup when a primary's lease expires (one version bump),
// the failover metrics, and what a returning server owns.
#include <catch2/catch.hpp>

#include "prometheus/registry.h"
#include "server/coordinator/coordinator_state.h"
#include "tests/fakes/fake_time_source.h"

namespace cairn {
namespace {

constexpr absl::Duration kLease = absl::Seconds(3);

v1::JobSpec Job(uint32_t servers, uint32_t partitions, uint32_t replication,
               absl::Duration rereplication_delay = absl::ZeroDuration()) {
  v1::JobSpec job;
  job.set_rereplication_delay_ms(absl::ToInt64Milliseconds(rereplication_delay));
  job.set_num_servers(servers);
  job.set_num_workers(1);
  job.set_num_partitions(partitions);
  job.set_replication(replication);
  job.set_lease_timeout_ms(absl::ToInt64Milliseconds(kLease));
  job.set_heartbeat_interval_ms(500);
  return job;
}

std::string Addr(int i) { return "127.0.0.1:" + std::to_string(7000 + i); }

std::vector<uint32_t> Backups(const v1::PartitionAssignment& a) {
  return {a.backups().begin(), a.backups().end()};
}

// The value of an unlabelled counter or gauge, or a histogram's count (or sum).
double Value(prometheus::Registry& registry, const std::string& name, bool sum = false) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    const prometheus::ClientMetric& m = family.metric.at(0);
    switch (family.type) {
      case prometheus::MetricType::Counter:
        return m.counter.value;
      case prometheus::MetricType::Histogram:
        return sum ? m.histogram.sample_sum : static_cast<double>(m.histogram.sample_count);
      default:
        return m.gauge.value;
    }
  }
  FAIL("no metric " << name);
  return -1;
}

// 3 servers, one worker, 6 partitions, r = 2: groups 0 {0, 3} backup 1,
// 1 {1, 4} backup 2, 2 {2, 5} backup 0.
struct Job3 {
  FakeTimeSource time;
  prometheus::Registry registry;
  CoordinatorMetrics metrics{registry};
  CoordinatorState state;

  explicit Job3(absl::Duration rereplication_delay = absl::ZeroDuration())
      : state(Job(3, 6, 2, rereplication_delay), &time, &metrics) {
    for (int i = 0; i < 3; ++i) REQUIRE(state.RegisterServer(-1, Addr(i), "").ok());
    REQUIRE(state.RegisterWorker(-1, "").ok());
    REQUIRE(state.ready());
  }
  // Everyone but `silent` heartbeats for a lease, then leases are expired.
  std::vector<MemberRecord> Silence(uint32_t silent) {
    time.Advance(kLease - absl::Milliseconds(500));
    for (uint32_t id = 0; id < 3; ++id) {
      if (id != silent) REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, id, -1).ok());
    }
    REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 1).ok());
    time.Advance(absl::Milliseconds(500));
    return state.ExpireLeases();
  }
};

TEST_CASE("at ready every partition has its group and r-1 backups", "[coordinator][failover]") {
  Job3 job;
  const v1::PartitionMap map = job.state.Map();
  REQUIRE(map.assignments_size() == 6);
  const std::vector<std::vector<uint32_t>> backups = {{1}, {2}, {0}};
  for (uint32_t p = 0; p < 6; ++p) {
    CAPTURE(p);
    CHECK(map.assignments(p).primary() == p % 3);
    CHECK(map.assignments(p).group() == p % 3);
    CHECK(Backups(map.assignments(p)) == backups[p % 3]);
  }
  CHECK(Value(job.registry, "cairn_coordinator_partitions_under_replicated") == 0);
  CHECK(Value(job.registry, "cairn_coordinator_failovers_total") == 0);
}

TEST_CASE("a dead primary's group is taken over by its backup with one version bump",
          "[coordinator][failover]") {
  Job3 job;
  const uint64_t ready_version = job.state.Map().version();
  const std::vector<MemberRecord> dead = job.Silence(1);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].id == 1);

  const v1::PartitionMap map = job.state.Map();
  CHECK(map.version() == ready_version + 1);
  CHECK(map.servers(1).state() == v1::MEMBER_STATE_DEAD);
  for (uint32_t p : {1u, 4u}) {
    CHECK(map.assignments(p).primary() == 2);
    CHECK(map.assignments(p).group() == 1);
    CHECK(Backups(map.assignments(p)).empty());
  }
  for (uint32_t p : {0u, 3u}) {
    CHECK(map.assignments(p).primary() == 0);
    CHECK(Backups(map.assignments(p)).empty());  // server 1 was their backup
  }
  for (uint32_t p : {2u, 5u}) CHECK(Backups(map.assignments(p)) == std::vector<uint32_t>{0});
  CHECK(Value(job.registry, "cairn_coordinator_failovers_total") == 1);
  CHECK(Value(job.registry, "cairn_coordinator_partitions_under_replicated") == 4);

  // The failover is timed until the promoted server heartbeats with the new
  // map: an older version does not count.
  job.time.Advance(absl::Milliseconds(700));
  REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, 2, -1, ready_version).ok());
  CHECK(Value(job.registry, "cairn_coordinator_failover_seconds") == 0);
  job.time.Advance(absl::Milliseconds(300));
  REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, 2, -1, map.version()).ok());
  CHECK(Value(job.registry, "cairn_coordinator_failover_seconds") == 1);
  // From server 1's lease expiry (when ExpireLeases ran) to this heartbeat.
  CHECK(Value(job.registry, "cairn_coordinator_failover_seconds", /*sum=*/true) ==
        Approx(1.0).margin(1e-9));
  REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, 2, -1, map.version()).ok());
  CHECK(Value(job.registry, "cairn_coordinator_failover_seconds") == 1);  // once

  // Server 1 comes back under its id: ALIVE, but it owns nothing.
  auto back = job.state.RegisterServer(1, Addr(11), "");
  REQUIRE(back.ok());
  CHECK(back->map.servers(1).state() == v1::MEMBER_STATE_ALIVE);
  for (const v1::PartitionAssignment& a : back->map.assignments()) {
    CHECK(a.primary() != 1);
    for (uint32_t b : a.backups()) CHECK(b != 1);
  }
  CHECK(Value(job.registry, "cairn_coordinator_partitions_under_replicated") == 4);
}

TEST_CASE("two primaries dying in one round: each group promotes an ALIVE backup",
          "[coordinator][failover]") {
  FakeTimeSource time;
  CoordinatorState state(Job(4, 4, 3), &time, nullptr);  // group g: backups g+1, g+2
  for (int i = 0; i < 4; ++i) REQUIRE(state.RegisterServer(-1, Addr(i), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  const uint64_t version = state.Map().version();
  time.Advance(kLease - absl::Milliseconds(1));
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 2, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 3, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, -1).ok());
  time.Advance(absl::Milliseconds(1));
  REQUIRE(state.ExpireLeases().size() == 2);  // servers 0 and 1
  const v1::PartitionMap map = state.Map();
  CHECK(map.version() == version + 1);
  CHECK(map.assignments(0).primary() == 2);  // group 0: 1 is dead too, so 2
  CHECK(Backups(map.assignments(0)).empty());
  CHECK(map.assignments(1).primary() == 2);  // group 1: backups 2, 3
  CHECK(Backups(map.assignments(1)) == std::vector<uint32_t>{3});
  CHECK(map.assignments(2).primary() == 2);
  CHECK(Backups(map.assignments(2)) == std::vector<uint32_t>{3});
  CHECK(map.assignments(3).primary() == 3);
  CHECK(Backups(map.assignments(3)).empty());
}

TEST_CASE("with replication 1 a dead server keeps its partitions and they count as "
          "under-replicated",
          "[coordinator][failover]") {
  FakeTimeSource time;
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  CoordinatorState state(Job(2, 4, 1), &time, &metrics);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterServer(-1, Addr(1), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  time.Advance(kLease - absl::Milliseconds(1));
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, -1).ok());
  time.Advance(absl::Milliseconds(1));
  REQUIRE(state.ExpireLeases().size() == 1);
  const v1::PartitionMap map = state.Map();
  for (uint32_t p = 0; p < 4; ++p) CHECK(map.assignments(p).primary() == p % 2);
  CHECK(Value(registry, "cairn_coordinator_failovers_total") == 0);
  CHECK(Value(registry, "cairn_coordinator_partitions_under_replicated") == 2);
}

// The servers listed as joining partition `p`.
std::vector<uint32_t> Joining(const v1::PartitionMap& map, uint32_t p) {
  return {map.assignments(p).joining().begin(), map.assignments(p).joining().end()};
}

TEST_CASE("within rereplication_delay a short group waits for an empty server, and after it a "
          "survivor takes the copy",
          "[coordinator][failover]") {
  Job3 job(absl::Seconds(10));
  REQUIRE(job.Silence(1).size() == 1);
  // Groups 0 {0, 3} (lost its backup) and 1 {1, 4} (lost its primary) are
  // short; the survivors hold groups already, so nobody joins yet.
  for (uint32_t p = 0; p < 6; ++p) CHECK(Joining(job.state.Map(), p).empty());
  CHECK(Value(job.registry, "cairn_coordinator_partitions_under_replicated") == 4);

  SECTION("an empty server registering within the delay takes both copies at once") {
    job.time.Advance(absl::Seconds(2));
    auto reg = job.state.RegisterServer(-1, Addr(3), "");
    REQUIRE(reg.ok());
    CHECK(reg->id == 3);
    for (uint32_t p : {0u, 1u, 3u, 4u}) CHECK(Joining(job.state.Map(), p) == std::vector<uint32_t>{3});
    CHECK(Joining(job.state.Map(), 2).empty());
  }
  SECTION("with nobody new, the least loaded survivor joins once the delay has passed") {
    for (int tick = 0; tick < 9; ++tick) {
      job.time.Advance(absl::Seconds(1));
      for (uint32_t id : {0u, 2u}) REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, id, -1).ok());
      REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 1).ok());
      job.state.ExpireLeases();
    }
    for (uint32_t p = 0; p < 6; ++p) CHECK(Joining(job.state.Map(), p).empty());  // 9 s
    job.time.Advance(absl::Seconds(1));
    for (uint32_t id : {0u, 2u}) REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, id, -1).ok());
    REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 1).ok());
    job.state.ExpireLeases();  // 10 s: overdue
    // Group 0 (primary 0) gets server 2, group 1 (primary 2 now) server 0.
    CHECK(Joining(job.state.Map(), 0) == std::vector<uint32_t>{2});
    CHECK(Joining(job.state.Map(), 1) == std::vector<uint32_t>{0});
  }
}

TEST_CASE("once a rejoined server holds its groups a primary moves to it at the next lease "
          "tick, not while a transfer or a checkpoint is under way",
          "[coordinator][failover]") {
  Job3 job(absl::Seconds(10));  // the survivors wait for an empty server
  REQUIRE(job.Silence(1).size() == 1);  // server 2 is primary of groups 1 and 2
  auto reg = job.state.RegisterServer(-1, Addr(3), "");
  REQUIRE(reg.ok());
  REQUIRE(reg->id == 3);  // joins groups 0 and 1
  auto tick = [&job] {
    job.time.Advance(absl::Milliseconds(500));
    for (uint32_t id : {0u, 2u, 3u}) {
      REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_SERVER, id, -1).ok());
    }
    REQUIRE(job.state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 1).ok());
    REQUIRE(job.state.ExpireLeases().empty());
  };
  // Group 0 is installed, group 1 still being sent: no primary moves.
  REQUIRE(job.state.ReplicaReady(3, 0).ok());
  tick();
  CHECK(job.state.Map().assignments(1).primary() == 2);
  CHECK(Value(job.registry, "cairn_coordinator_primary_moves_total") == 0);

  // Both installed, but a checkpoint request runs: still nothing.
  REQUIRE(job.state.ReplicaReady(3, 1).ok());
  job.state.CheckpointStarted();
  tick();
  const uint64_t version = job.state.Map().version();
  CHECK(job.state.Map().assignments(1).primary() == 2);

  // The checkpoint ends: at the next tick server 2 (primary of 2 groups)
  // hands group 1 to server 3 (none), one version bump; server 2 backs it up.
  job.state.CheckpointEnded();
  tick();
  const v1::PartitionMap map = job.state.Map();
  CHECK(map.version() == version + 1);
  for (uint32_t p : {1u, 4u}) {
    CHECK(map.assignments(p).primary() == 3);
    CHECK(Backups(map.assignments(p)) == std::vector<uint32_t>{2});
  }
  for (uint32_t p : {0u, 3u}) CHECK(map.assignments(p).primary() == 0);
  for (uint32_t p : {2u, 5u}) CHECK(map.assignments(p).primary() == 2);
  CHECK(Value(job.registry, "cairn_coordinator_primary_moves_total") == 1);
  CHECK(Value(job.registry, "cairn_coordinator_partitions_under_replicated") == 0);
  tick();  // balanced: 1 group each
  CHECK(job.state.Map().version() == map.version());
}

}  // namespace
}  // namespace cairn
