// The coordinator's persisted state (field case B13, fault scenario T4): what
// CoordinatorState writes to a real RocksDB store on every change, its
// encoding, and a restore on a fake clock: same ids, map version and ready,
// leases restarted with a grace (nobody dead for the coordinator's own
// downtime), registrations held until a member re-attaches, and a stored
// state nobody comes back to dropped after one lease.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/coordinator_store.h"
#include "server/coordinator/partition_map_builder.h"
#include "server/coordinator/state_codec.h"
#include "tests/fakes/fake_time_source.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

constexpr absl::Duration kLease = absl::Seconds(3);

v1::JobSpec Job() {
  v1::JobSpec job;
  job.set_num_servers(2);
  job.set_num_workers(2);
  job.set_num_partitions(4);
  job.set_replication(2);
  job.set_lease_timeout_ms(absl::ToInt64Milliseconds(kLease));
  job.set_heartbeat_interval_ms(500);
  job.set_config_hash("00000000000000aa");
  return job;
}

std::string Addr(int i) { return "127.0.0.1:" + std::to_string(7000 + i); }

std::string NewStoreDir() {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("coordinator_restore_test");
  REQUIRE(dir.ok());
  return *dir + "/state";
}

PersistedState ReadStored(const std::string& dir) {
  auto raw = CoordinatorStore::Peek(dir, kStateKey);
  INFO(raw.status().message());
  REQUIRE(raw.ok());
  REQUIRE(raw->has_value());
  auto state = DecodeState(**raw, dir);
  INFO(state.status().message());
  REQUIRE(state.ok());
  return *std::move(state);
}

const v1::Member* FindMember(const std::vector<v1::Member>& members, v1::MemberRole role,
                             uint32_t id) {
  for (const v1::Member& m : members) {
    if (m.role() == role && m.id() == id) return &m;
  }
  return nullptr;
}

// A job run to ready, with worker 1 at clock 7 and worker 0 left at 9, then
// "killed" (the state object and store closed without any goodbye).
struct StoredJob {
  std::string dir = NewStoreDir();
  v1::PartitionMap map;  // the last map the first coordinator served

  StoredJob() {
    FakeTimeSource time;
    auto store = CoordinatorStore::Open(dir, /*create=*/true);
    REQUIRE(store.ok());
    CoordinatorState state(Job(), &time, nullptr, store->get());
    REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
    REQUIRE(state.RegisterServer(-1, Addr(1), "").ok());
    REQUIRE(state.RegisterWorker(-1, "").ok());
    REQUIRE(state.RegisterWorker(-1, "").ok());
    REQUIRE(state.ready());
    REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 7).ok());
    REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 0, 9).ok());
    map = state.Map();
  }
};

TEST_CASE("every membership change is written to the store, synced, with the map version",
          "[coordinator][restore]") {
  const std::string dir = NewStoreDir();
  FakeTimeSource time;
  auto store = CoordinatorStore::Open(dir, true);
  REQUIRE(store.ok());
  CoordinatorState state(Job(), &time, nullptr, store->get());
  REQUIRE(state.RegisterServer(-1, Addr(0), "m0").ok());
  {
    auto raw = (*store)->Get(kStateKey);
    REQUIRE(raw.ok());
    REQUIRE(raw->has_value());
    auto stored = DecodeState(**raw, dir);
    REQUIRE(stored.ok());
    CHECK(stored->map.version() == state.Map().version());
    CHECK(stored->job.config_hash() == "00000000000000aa");
    REQUIRE(stored->members.size() == 1);
    CHECK(stored->members[0].address == Addr(0));
    CHECK(stored->members[0].metrics_address == "m0");
    CHECK(stored->members[0].incarnation == 1);
  }
  // A heartbeat is not a change: nothing is written.
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  time.Advance(kLease);
  REQUIRE(state.ExpireLeases().size() == 1);
  auto raw = (*store)->Get(kStateKey);
  REQUIRE(raw.ok());
  auto stored = DecodeState(**raw, dir);
  REQUIRE(stored.ok());
  CHECK(stored->map.version() == state.Map().version());
  CHECK(stored->members[0].state == v1::MEMBER_STATE_DEAD);
}

TEST_CASE("the state value round-trips and rejects damage and other versions",
          "[coordinator][restore]") {
  PersistedState state;
  state.job = Job();
  state.map = BuildPartitionMap(12, 4, AssignRoundRobin(4, std::vector<uint32_t>{0, 1}, 2), {},
                                true);
  MemberRecord m;
  m.role = v1::MEMBER_ROLE_WORKER;
  m.id = 3;
  m.state = v1::MEMBER_STATE_LEFT;
  m.clock = 41;
  m.start_clock = 5;
  m.incarnation = 2;
  m.metrics_address = "127.0.0.1:9";
  state.members.push_back(m);
  const std::string value = EncodeState(state);
  auto back = DecodeState(value, "store");
  REQUIRE(back.ok());
  CHECK(back->job.SerializeAsString() == state.job.SerializeAsString());
  CHECK(back->map.SerializeAsString() == state.map.SerializeAsString());
  REQUIRE(back->members.size() == 1);
  CHECK(back->members[0].role == v1::MEMBER_ROLE_WORKER);
  CHECK(back->members[0].id == 3);
  CHECK(back->members[0].state == v1::MEMBER_STATE_LEFT);
  CHECK(back->members[0].clock == 41);
  CHECK(back->members[0].start_clock == 5);
  CHECK(back->members[0].incarnation == 2);
  CHECK(back->members[0].metrics_address == "127.0.0.1:9");

  std::string flipped = value;
  flipped[flipped.size() / 2] ^= 0x01;
  CHECK(DecodeState(flipped, "store").status().code() == absl::StatusCode::kDataLoss);
  CHECK(DecodeState(value.substr(0, 6), "store").status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(DecodeState(flipped, "the/store").status().message()),
             Catch::Contains("the/store"));
}

TEST_CASE("a restored coordinator goes on with the same ids, map version and ready, and "
          "declares nobody dead for its own downtime",
          "[coordinator][restore][B13]") {
  StoredJob stored;
  // The coordinator was down for far longer than a lease.
  FakeTimeSource time(absl::FromUnixSeconds(1893456000) + absl::Hours(1));
  auto store = CoordinatorStore::Open(stored.dir, /*create=*/false);
  REQUIRE(store.ok());
  v1::JobSpec fresh = Job();
  fresh.set_num_partitions(99);  // the constructor's job yields to the stored one
  CoordinatorState state(fresh, &time, nullptr, store->get());
  state.Restore(ReadStored(stored.dir), stored.dir);

  const v1::PartitionMap map = state.Map();
  CHECK(map.version() == stored.map.version());
  CHECK(SameMapContent(map, stored.map));
  CHECK(map.ready());
  CHECK(state.job().num_partitions() == 4);
  CHECK(state.restoring());
  CHECK_FALSE(state.ready());  // not before a member re-attached
  // Held until a member re-attaches: the clients retry Unavailable.
  CHECK(state.RegisterWorker(-1, "").status().code() == absl::StatusCode::kUnavailable);
  CHECK(state.ExpireLeases().empty());

  // Server 0 heartbeats first: the state is confirmed.
  time.Advance(absl::Milliseconds(400));
  auto beat = state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1, map.version());
  REQUIRE(beat.ok());
  CHECK(beat->map_version == stored.map.version());
  CHECK_FALSE(state.restoring());
  CHECK(state.ready());
  // Worker 1 re-attaches with a newer clock; a dead or left member does not.
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 8).ok());
  CHECK(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 9).status().code() ==
        absl::StatusCode::kNotFound);  // it had left

  const std::vector<v1::Member> members = state.Members();
  REQUIRE(members.size() == 4);
  CHECK(FindMember(members, v1::MEMBER_ROLE_SERVER, 1)->state() == v1::MEMBER_STATE_ALIVE);
  CHECK(FindMember(members, v1::MEMBER_ROLE_SERVER, 1)->address() == Addr(1));
  CHECK(FindMember(members, v1::MEMBER_ROLE_WORKER, 0)->state() == v1::MEMBER_STATE_LEFT);

  // Server 1 never heartbeats: its grace runs out one lease after the
  // restore, not before, and only then is it declared dead (one bump).
  time.Advance(kLease - absl::Milliseconds(400) - absl::Milliseconds(1));
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 9).ok());
  CHECK(state.ExpireLeases().empty());
  time.Advance(absl::Milliseconds(1));
  const std::vector<MemberRecord> dead = state.ExpireLeases();
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].role == v1::MEMBER_ROLE_SERVER);
  CHECK(dead[0].id == 1);
  CHECK(dead[0].incarnation == 1);
  CHECK(state.Map().version() == stored.map.version() + 1);
  // r = 2: server 0 took over server 1's group.
  const v1::PartitionMap after = state.Map();
  for (const v1::PartitionAssignment& a : after.assignments()) CHECK(a.primary() == 0);

  // A late worker gets the next id, starting at the live workers' clock.
  auto late = state.RegisterWorker(-1, "");
  REQUIRE(late.ok());
  CHECK(late->id == 2);
  for (const v1::Member& w : late->map.workers()) {
    if (w.id() == 2) CHECK(w.start_clock() == 9);
  }
}

TEST_CASE("a restored worker clock is the last one stored, a worker re-registering keeps its id",
          "[coordinator][restore]") {
  StoredJob stored;
  const PersistedState persisted = ReadStored(stored.dir);
  bool found = false;
  for (const MemberRecord& m : persisted.members) {
    if (m.role == v1::MEMBER_ROLE_WORKER && m.id == 0) {
      found = true;
      CHECK(m.state == v1::MEMBER_STATE_LEFT);
      CHECK(m.clock == 9);  // written at its leave
    }
  }
  CHECK(found);
  FakeTimeSource time;
  CoordinatorState state(Job(), &time, nullptr);
  state.Restore(persisted, stored.dir);
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 7).ok());
  auto again = state.RegisterWorker(0, "");
  REQUIRE(again.ok());
  CHECK(again->id == 0);
}

TEST_CASE("a stored state nobody re-attaches to within a lease is dropped: a new job starts",
          "[coordinator][restore]") {
  StoredJob stored;
  FakeTimeSource time;
  auto store = CoordinatorStore::Open(stored.dir, false);
  REQUIRE(store.ok());
  CoordinatorState state(Job(), &time, nullptr, store->get());
  state.Restore(ReadStored(stored.dir), stored.dir);
  time.Advance(kLease - absl::Milliseconds(1));
  CHECK(state.ExpireLeases().empty());
  CHECK(state.restoring());
  time.Advance(absl::Milliseconds(1));
  CHECK(state.ExpireLeases().empty());  // nobody declared dead: all forgotten
  CHECK_FALSE(state.restoring());
  const v1::PartitionMap map = state.Map();
  CHECK(map.version() == 1);
  CHECK_FALSE(map.ready());
  CHECK(map.servers().empty());
  CHECK(state.Members().empty());
  auto raw = (*store)->Get(kStateKey);
  REQUIRE(raw.ok());
  CHECK_FALSE(raw->has_value());
  // A fresh job: ids from 0 again.
  auto server = state.RegisterServer(-1, Addr(5), "");
  REQUIRE(server.ok());
  CHECK(server->id == 0);
  CHECK(server->map.version() == 2);
}

TEST_CASE("a stored state with no member alive starts afresh at once", "[coordinator][restore]") {
  PersistedState persisted;
  persisted.job = Job();
  persisted.map = BuildPartitionMap(7, 4, {}, {}, true);
  MemberRecord left;
  left.role = v1::MEMBER_ROLE_WORKER;
  left.state = v1::MEMBER_STATE_LEFT;
  persisted.members.push_back(left);
  FakeTimeSource time;
  CoordinatorState state(Job(), &time, nullptr);
  state.Restore(persisted, "store");
  CHECK_FALSE(state.restoring());
  CHECK(state.Map().version() == 1);
  CHECK(state.RegisterServer(-1, Addr(0), "").ok());
}

TEST_CASE("JobOver once every worker left or died, Persist and ForgetStored",
          "[coordinator][restore]") {
  const std::string dir = NewStoreDir();
  FakeTimeSource time;
  auto store = CoordinatorStore::Open(dir, true);
  REQUIRE(store.ok());
  CoordinatorState state(Job(), &time, nullptr, store->get());
  CHECK_FALSE(state.JobOver());  // not started
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterServer(-1, Addr(1), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 5).ok());
  REQUIRE(state.Persist().ok());
  CHECK(ReadStored(dir).members[3].clock == 5);  // Persist writes the fresh clocks
  CHECK_FALSE(state.JobOver());
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 0, 10).ok());
  CHECK_FALSE(state.JobOver());
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 1, 10).ok());
  CHECK(state.JobOver());
  REQUIRE(state.ForgetStored().ok());
  auto raw = CoordinatorStore::Peek(dir, kStateKey);
  REQUIRE(raw.ok());
  CHECK_FALSE(raw->has_value());
}

}  // namespace
}  // namespace cairn
