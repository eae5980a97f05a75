// A worker's registration with the coordinator (worker/client/worker_session.h)
// against a fake coordinator (tests/fakes/fake_coordinator.h): what a
// heartbeat carries, word of a newer map, and each way the session ends.
#include "worker/client/worker_session.h"

#include <atomic>
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tests/fakes/fake_coordinator.h"

namespace cairn {
namespace {

v1::JobSpec Job() {
  v1::JobSpec job;
  job.set_num_workers(4);
  job.set_heartbeat_interval_ms(50);
  job.set_lease_timeout_ms(1000);
  return job;
}

v1::PartitionMap MapVersion(uint64_t version) {
  v1::PartitionMap map;
  map.set_version(version);
  return map;
}

// Waits up to 5 s for `done`.
template <typename F>
bool Eventually(F done) {
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (!done()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

struct Rig {
  Rig() : coordinator(Job(), MapVersion(5)), session(&coordinator, 3, 2, Job()) {}

  void Start() {
    session.StartHeartbeats(WorkerSession::Hooks{
        .clock = [this] { return clock.load(); },
        .map_version = [this] { return map_version.load(); },
        .on_newer_map = [this] { ++newer_maps; },
    });
  }

  FakeCoordinator coordinator;
  std::atomic<int64_t> clock{17};
  std::atomic<uint64_t> map_version{5};
  std::atomic<int> newer_maps{0};
  WorkerSession session;
};

TEST_CASE("WorkerSession heartbeats carry the worker's id, incarnation, clock and map") {
  Rig rig;
  rig.Start();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= 2; }));
  const v1::HeartbeatRequest hb = rig.coordinator.last_heartbeat();
  CHECK(hb.role() == v1::MEMBER_ROLE_WORKER);
  CHECK(hb.id() == 3);
  CHECK(hb.incarnation() == 2);
  CHECK(hb.clock() == 17);
  CHECK(hb.map_version() == 5);
  CHECK(rig.newer_maps.load() == 0);  // the coordinator's map is the same
  CHECK(rig.session.Lost().ok());

  rig.clock.store(18);
  REQUIRE(Eventually([&] { return rig.coordinator.last_heartbeat().clock() == 18; }));
}

TEST_CASE("WorkerSession passes on a newer map, and none before the first map") {
  Rig rig;
  rig.map_version.store(0);
  rig.coordinator.SetMap(MapVersion(6));
  rig.Start();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= 3; }));
  CHECK(rig.newer_maps.load() == 0);
  rig.map_version.store(5);
  REQUIRE(Eventually([&] { return rig.newer_maps.load() >= 1; }));
  rig.map_version.store(6);  // installed
  const int seen = rig.newer_maps.load();
  const int heartbeats = rig.coordinator.heartbeats();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= heartbeats + 3; }));
  CHECK(rig.newer_maps.load() <= seen + 1);  // at most the one in flight
}

TEST_CASE("WorkerSession ends when the coordinator declares the worker dead") {
  Rig rig;
  rig.Start();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= 1; }));
  rig.coordinator.AnswerHeartbeats(absl::NotFoundError("worker 3 is not a member"));
  REQUIRE(Eventually([&] { return !rig.session.Lost().ok(); }));
  const absl::Status lost = rig.session.Lost();
  CHECK(absl::IsUnavailable(lost));
  CHECK(absl::StrContains(lost.message(), "declared worker 3 dead"));
  // No heartbeat after the end.
  const int after = rig.coordinator.heartbeats();
  absl::SleepFor(absl::Milliseconds(200));
  CHECK(rig.coordinator.heartbeats() == after);
}

TEST_CASE("WorkerSession ends when the job failed, with the coordinator's reason") {
  Rig rig;
  rig.Start();
  rig.coordinator.FailJob("server 1 lost its data");
  REQUIRE(Eventually([&] { return !rig.session.Lost().ok(); }));
  CHECK(absl::IsCancelled(rig.session.Lost()));
  CHECK(absl::StrContains(rig.session.Lost().message(), "server 1 lost its data"));
}

TEST_CASE("WorkerSession outlasts heartbeats refused for less than the loss timeout") {
  Rig rig;
  rig.Start();
  rig.coordinator.AnswerHeartbeats(absl::UnavailableError("coordinator restarting"));
  const int before = rig.coordinator.heartbeats();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= before + 5; }));
  rig.coordinator.AnswerHeartbeats(absl::OkStatus());
  const int answered = rig.coordinator.heartbeats();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= answered + 2; }));
  CHECK(rig.session.Lost().ok());
}

TEST_CASE("WorkerSession sends no heartbeat once stopped") {
  Rig rig;
  rig.Start();
  REQUIRE(Eventually([&] { return rig.coordinator.heartbeats() >= 1; }));
  rig.session.StopAndWait();
  const int after = rig.coordinator.heartbeats();
  absl::SleepFor(absl::Milliseconds(200));
  CHECK(rig.coordinator.heartbeats() == after);
  CHECK(rig.session.Lost().ok());  // left, not lost
}

}  // namespace
}  // namespace cairn
