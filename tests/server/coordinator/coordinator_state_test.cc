// CoordinatorState: the start-up barrier, map versions, lease expiry on a fake
// clock, start clocks of late joiners, the long poll, and the metrics.
#include "server/coordinator/coordinator_state.h"

#include <thread>

#include <catch2/catch.hpp>

#include "absl/synchronization/notification.h"
#include "prometheus/registry.h"
#include "tests/fakes/fake_time_source.h"

namespace cairn {
namespace {

constexpr absl::Duration kLease = absl::Seconds(3);

v1::JobSpec Job(uint32_t servers, uint32_t workers, uint32_t partitions) {
  v1::JobSpec job;
  job.set_num_servers(servers);
  job.set_num_workers(workers);
  job.set_num_partitions(partitions);
  job.set_lease_timeout_ms(absl::ToInt64Milliseconds(kLease));
  job.set_heartbeat_interval_ms(500);
  return job;
}

std::string Addr(int i) { return "127.0.0.1:" + std::to_string(7000 + i); }

std::vector<uint32_t> Primaries(const v1::PartitionMap& map) {
  std::vector<uint32_t> out;
  for (const auto& a : map.assignments()) out.push_back(a.primary());
  return out;
}

std::vector<uint32_t> WorkerIds(const v1::PartitionMap& map) {
  std::vector<uint32_t> out;
  for (const auto& w : map.workers()) out.push_back(w.id());
  return out;
}

TEST_CASE("the map starts at version 1, empty and not ready", "[coordinator]") {
  FakeTimeSource time;
  CoordinatorState state(Job(2, 3, 8), &time, nullptr);
  const v1::PartitionMap map = state.Map();
  CHECK(map.version() == 1);
  CHECK(map.num_partitions() == 8);
  CHECK(map.assignments().empty());
  CHECK_FALSE(map.ready());
  const CoordinatorState::Missing missing = state.MissingMembers();
  CHECK(missing.servers == std::vector<uint32_t>{0, 1});
  CHECK(missing.workers == std::vector<uint32_t>{0, 1, 2});
}

TEST_CASE("ready only once every expected server and worker has registered",
          "[coordinator][barrier]") {
  FakeTimeSource time;
  CoordinatorState state(Job(2, 3, 4), &time, nullptr);
  auto s0 = state.RegisterServer(-1, Addr(0), "");
  REQUIRE(s0.ok());
  CHECK(s0->id == 0);
  CHECK(s0->map.version() == 2);
  // Before ready the placement uses the servers registered so far.
  CHECK(Primaries(s0->map) == std::vector<uint32_t>{0, 0, 0, 0});
  CHECK_FALSE(s0->map.ready());

  REQUIRE(state.RegisterWorker(-1, "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  auto s1 = state.RegisterServer(-1, Addr(1), "");
  REQUIRE(s1.ok());
  CHECK(s1->map.version() == 5);
  CHECK(Primaries(s1->map) == std::vector<uint32_t>{0, 1, 0, 1});
  CHECK_FALSE(s1->map.ready());
  CHECK_FALSE(state.ready());
  CHECK(state.MissingMembers().servers.empty());
  CHECK(state.MissingMembers().workers == std::vector<uint32_t>{2});

  auto w2 = state.RegisterWorker(-1, "");
  REQUIRE(w2.ok());
  CHECK(w2->id == 2);
  CHECK(w2->map.ready());
  CHECK(w2->map.version() == 6);
  CHECK(state.ready());
  CHECK(WorkerIds(w2->map) == std::vector<uint32_t>{0, 1, 2});
}

TEST_CASE("a server is declared dead after lease_timeout, not before, and keeps its partitions",
          "[coordinator][lease]") {
  FakeTimeSource time;
  CoordinatorState state(Job(2, 1, 4), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterServer(-1, Addr(1), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  const uint64_t ready_version = state.Map().version();

  // Everyone but server 1 heartbeats.
  time.Advance(absl::Seconds(2));
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 1).ok());
  time.Advance(kLease - absl::Seconds(2) - absl::Milliseconds(1));
  CHECK(state.ExpireLeases().empty());
  CHECK(state.Map().version() == ready_version);

  time.Advance(absl::Milliseconds(1));
  const std::vector<MemberRecord> expired = state.ExpireLeases();
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].role == v1::MEMBER_ROLE_SERVER);
  CHECK(expired[0].id == 1);
  const v1::PartitionMap map = state.Map();
  CHECK(map.version() == ready_version + 1);
  REQUIRE(map.servers_size() == 2);
  CHECK(map.servers(1).state() == v1::MEMBER_STATE_DEAD);
  CHECK(Primaries(map) == std::vector<uint32_t>{0, 1, 0, 1});  // no failover yet
  CHECK(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 1, -1).status().code() ==
        absl::StatusCode::kNotFound);

  // It comes back under its id and is ALIVE again.
  auto back = state.RegisterServer(1, Addr(11), "");
  REQUIRE(back.ok());
  CHECK(back->id == 1);
  CHECK(back->map.version() == ready_version + 2);
  CHECK(back->map.servers(1).state() == v1::MEMBER_STATE_ALIVE);
  CHECK(back->map.servers(1).address() == Addr(11));
  CHECK(Primaries(back->map) == std::vector<uint32_t>{0, 1, 0, 1});
}

TEST_CASE("after ready the placement is frozen: a new server owns nothing",
          "[coordinator][map]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 1, 3), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  auto late = state.RegisterServer(-1, Addr(1), "");
  REQUIRE(late.ok());
  CHECK(late->id == 1);
  CHECK(late->map.servers_size() == 2);
  CHECK(Primaries(late->map) == std::vector<uint32_t>{0, 0, 0});
}

TEST_CASE("a dead worker leaves the map's workers with a version bump", "[coordinator][lease]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 2, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  const uint64_t version = state.Map().version();
  CHECK(WorkerIds(state.Map()) == std::vector<uint32_t>{0, 1});

  time.Advance(absl::Seconds(2));
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 3).ok());
  time.Advance(absl::Seconds(1));
  const std::vector<MemberRecord> expired = state.ExpireLeases();
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].role == v1::MEMBER_ROLE_WORKER);
  CHECK(expired[0].id == 1);
  CHECK(state.Map().version() == version + 1);
  CHECK(WorkerIds(state.Map()) == std::vector<uint32_t>{0});
}

TEST_CASE("a worker that leaves is LEFT, not DEAD, and leaves the barrier", "[coordinator]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 3, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  for (int i = 0; i < 3; ++i) REQUIRE(state.RegisterWorker(-1, "").ok());
  const uint64_t version = state.Map().version();
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 2, /*final_clock=*/7).ok());
  CHECK(state.Map().version() == version + 1);
  CHECK(WorkerIds(state.Map()) == std::vector<uint32_t>{0, 1});
  time.Advance(kLease * 2);
  for (const MemberRecord& dead : state.ExpireLeases()) {
    CHECK_FALSE((dead.role == v1::MEMBER_ROLE_WORKER && dead.id == 2));
  }
  bool found = false;
  for (const v1::Member& member : state.Members()) {
    if (member.role() == v1::MEMBER_ROLE_WORKER && member.id() == 2) {
      found = true;
      CHECK(member.state() == v1::MEMBER_STATE_LEFT);
    }
  }
  CHECK(found);
  CHECK(state.Leave(v1::MEMBER_ROLE_WORKER, 9, 0).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a worker registering again under its id is a new incarnation and the old one is "
          "refused",
          "[coordinator][incarnation]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 2, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  auto first = state.RegisterWorker(0, "");
  REQUIRE(first.ok());
  REQUIRE(state.RegisterWorker(1, "").ok());
  CHECK(first->incarnation == 1);
  // Killed: its lease runs out while the others renew.
  time.Advance(kLease * 2);
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 0).ok());
  (void)state.ExpireLeases();
  auto second = state.RegisterWorker(0, "");
  REQUIRE(second.ok());
  CHECK(second->incarnation == 2);
  bool listed = false;
  for (const v1::Member& w : second->map.workers()) {
    if (w.id() == 0) {
      listed = true;
      CHECK(w.incarnation() == 2);
    }
  }
  CHECK(listed);
  // The first process, still around, can neither renew nor leave for it.
  absl::Status renew =
      state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 3, /*map_version=*/0, /*incarnation=*/1).status();
  CHECK(renew.code() == absl::StatusCode::kNotFound);
  CHECK(renew.message().find("incarnation 1 is no longer registered") != std::string::npos);
  CHECK(state.Leave(v1::MEMBER_ROLE_WORKER, 0, 3, /*incarnation=*/1).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(WorkerIds(state.Map()) == std::vector<uint32_t>{0, 1});
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 3, 0, 2).ok());
  // A clean leave, then a third registration.
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 0, 3, 2).ok());
  auto third = state.RegisterWorker(0, "");
  REQUIRE(third.ok());
  CHECK(third->incarnation == 3);
}

TEST_CASE("a late worker starts at the minimum clock of the live workers",
          "[coordinator][barrier]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 3, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  for (int i = 0; i < 3; ++i) {
    auto worker = state.RegisterWorker(-1, "");
    REQUIRE(worker.ok());
    CHECK(worker->map.workers(static_cast<int>(worker->id)).start_clock() == 0);
  }
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 5).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 1, 7).ok());
  REQUIRE(state.Heartbeat(v1::MEMBER_ROLE_WORKER, 2, 2).ok());
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 2, 2).ok());  // no longer counts

  auto late = state.RegisterWorker(-1, "");
  REQUIRE(late.ok());
  CHECK(late->id == 3);
  REQUIRE(late->map.workers_size() == 3);
  CHECK(late->map.workers(2).id() == 3);
  CHECK(late->map.workers(2).start_clock() == 5);

  // Worker 2 comes back under its own id: its old clock does not count.
  auto back = state.RegisterWorker(2, "");
  REQUIRE(back.ok());
  CHECK(back->map.workers(2).id() == 2);
  CHECK(back->map.workers(2).start_clock() == 5);
}

TEST_CASE("heartbeats answer the lease and the current map version", "[coordinator][lease]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 1, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  auto beat = state.Heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1);
  REQUIRE(beat.ok());
  CHECK(beat->lease == kLease);
  CHECK(beat->map_version == 2);
  auto unknown = state.Heartbeat(v1::MEMBER_ROLE_WORKER, 0, 0);
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a server must give a host:port address", "[coordinator]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 1, 2), &time, nullptr);
  auto bad = state.RegisterServer(-1, "no-port", "");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(state.Map().version() == 1);
}

TEST_CASE("WaitForMap returns as soon as the version moves, else after the timeout",
          "[coordinator][watch]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 1, 2), &time, nullptr);
  SECTION("an older known version returns at once") {
    CHECK(state.WaitForMap(0, absl::Seconds(30)).version() == 1);
  }
  SECTION("no change: the same version after the timeout") {
    const absl::Time start = absl::Now();
    CHECK(state.WaitForMap(1, absl::Milliseconds(50)).version() == 1);
    CHECK(absl::Now() - start >= absl::Milliseconds(50));
  }
  SECTION("a registration wakes the waiter") {
    absl::Notification started;
    uint64_t seen = 0;
    std::thread waiter([&] {
      started.Notify();
      seen = state.WaitForMap(1, absl::Seconds(30)).version();
    });
    started.WaitForNotification();
    const absl::Time start = absl::Now();
    REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
    waiter.join();
    CHECK(seen == 2);
    CHECK(absl::Now() - start < absl::Seconds(10));
  }
  SECTION("shutdown wakes the waiter with the current map") {
    std::thread waiter([&] { CHECK(state.WaitForMap(1, absl::Seconds(30)).version() == 1); });
    state.Shutdown();
    waiter.join();
  }
}

TEST_CASE("WaitUntilReady ends at the barrier, at the timeout, or at shutdown",
          "[coordinator][barrier]") {
  FakeTimeSource time;
  CoordinatorState state(Job(1, 1, 2), &time, nullptr);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  SECTION("timeout") { CHECK_FALSE(state.WaitUntilReady(absl::Milliseconds(20))); }
  SECTION("the last member registers") {
    std::thread waiter([&] { CHECK(state.WaitUntilReady(absl::Seconds(30))); });
    REQUIRE(state.RegisterWorker(-1, "").ok());
    waiter.join();
    CHECK(state.WaitUntilReady(absl::ZeroDuration()));
  }
  SECTION("shutdown") {
    std::thread waiter([&] { CHECK_FALSE(state.WaitUntilReady(absl::Seconds(30))); });
    state.Shutdown();
    waiter.join();
  }
}

double Value(prometheus::Registry& registry, const std::string& name,
             const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  FAIL("no metric " << name);
  return -1;
}

TEST_CASE("members, map version and lease expirations are exported", "[coordinator][metrics]") {
  FakeTimeSource time;
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  CoordinatorState state(Job(2, 1, 2), &time, &metrics);
  REQUIRE(state.RegisterServer(-1, Addr(0), "").ok());
  REQUIRE(state.RegisterServer(-1, Addr(1), "").ok());
  REQUIRE(state.RegisterWorker(-1, "").ok());
  REQUIRE(state.Leave(v1::MEMBER_ROLE_WORKER, 0, 0).ok());
  time.Advance(kLease);
  REQUIRE(state.ExpireLeases().size() == 2);

  CHECK(Value(registry, "cairn_coordinator_members", {{"role", "server"}, {"state", "dead"}}) ==
        2);
  CHECK(Value(registry, "cairn_coordinator_members", {{"role", "server"}, {"state", "alive"}}) ==
        0);
  CHECK(Value(registry, "cairn_coordinator_members", {{"role", "worker"}, {"state", "left"}}) ==
        1);
  CHECK(Value(registry, "cairn_coordinator_lease_expirations_total", {{"role", "server"}}) == 2);
  CHECK(Value(registry, "cairn_coordinator_lease_expirations_total", {{"role", "worker"}}) == 0);
  CHECK(Value(registry, "cairn_coordinator_map_version", {}) == state.Map().version());
  metrics.CountRequest("Heartbeat");
  metrics.CountRequest("NoSuchMethod");  // not counted: the label set is fixed
  CHECK(Value(registry, "cairn_coordinator_requests_total", {{"method", "Heartbeat"}}) == 1);
}

}  // namespace
}  // namespace cairn
