// Consistency on one shard without gRPC: the SSP bound (field case B15), SSP
// with s = 0 blocking exactly as BSP, and membership: a dead worker leaves the
// minimum and releases waiting pulls; a late joiner starts at the minimum.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "common/bytes.h"
#include "server/shard/clock_tracker.h"
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

v1::JobSpec ScalarJob(v1::Consistency consistency, int64_t staleness) {
  return Job({ScalarTable("w", consistency, v1::AGGREGATION_SUM, staleness)}, 2);
}

// A ready map giving both partitions to server 0, with `workers` as
// (id, start_clock).
v1::PartitionMap Map(std::vector<std::pair<uint32_t, int64_t>> workers, uint64_t version) {
  std::vector<uint32_t> ids;
  std::vector<int64_t> starts;
  for (const auto& [id, start] : workers) {
    ids.push_back(id);
    starts.push_back(start);
  }
  return cairn::Map(2, ids, version, /*server=*/0, starts);
}

// The value of "w" as worker 0 pulls it at clock 0 (never waits under ASP).
float ValueAtClock0(Shard& shard) {
  PullResult pull;
  StartPull(shard, &pull, 0, 0);
  REQUIRE(pull.done);
  REQUIRE(pull.status.ok());
  return pull.value();
}

// lr 1: w -= 1 per push.
v1::PushRequest Push(uint32_t worker, uint64_t seq, int64_t clock) {
  return PushScalar(worker, seq, clock, 1.0f);
}

}  // namespace

TEST_CASE("B15: under SSP s=2 a pull blocks exactly when its clock minus the minimum exceeds 2",
          "[shard][ssp][cases]") {
  // 1 server, 3 workers, w = 0, each push is grad 1 at lr 1.
  Shard shard(0, ScalarJob(v1::CONSISTENCY_SSP, 2), nullptr);
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}, {2, 0}}, 1)).ok());
  uint64_t seq[2] = {0, 0};
  for (int64_t c = 0; c < 3; ++c) {
    for (uint32_t w = 0; w < 2; ++w) {
      PullResult pull;
      StartPull(shard, &pull, w, c);
      REQUIRE(pull.done);  // c - min <= 2 (worker 2 is at clock 0): never blocks
      REQUIRE(shard.Push(Push(w, ++seq[w], c)).ok());
      REQUIRE(shard.Clock(Tick(w, c + 1)).ok());
    }
  }
  // Clock 3 with worker 2 still at 0: 3 - 0 > 2, so both fast workers wait.
  PullResult a, b;
  StartPull(shard, &a, 0, 3);
  StartPull(shard, &b, 1, 3);
  CHECK_FALSE(a.done);
  CHECK_FALSE(b.done);
  REQUIRE(shard.Push(Push(2, 1, 0)).ok());
  REQUIRE(shard.Clock(Tick(2, 1)).ok());
  REQUIRE(a.done);
  REQUIRE(b.done);
  // All 6 fast pushes and worker 2's first: -7; the reply says min clock 1.
  CHECK(a.value() == -7.0f);
  CHECK(b.value() == -7.0f);
  CHECK(a.response.min_clock() == 1);
}

TEST_CASE("B15: SSP with s=0 blocks the same pulls at the same moments as BSP",
          "[shard][ssp][cases]") {
  // One random schedule of pushes, ticks and pulls of 3 workers, run against
  // a BSP and an SSP s=0 shard: the trace of when each pull completes
  // (the event index) must be identical.
  const uint64_t seed = GENERATE(1, 2, 3, 4, 5);
  auto trace = [seed](v1::Consistency mode) {
    Shard shard(0, ScalarJob(mode, 0), nullptr);
    REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}, {2, 0}}, 1)).ok());
    std::mt19937_64 rng(seed);
    std::vector<int64_t> clock(3, 0);
    std::vector<uint64_t> seq(3, 0);
    std::vector<std::unique_ptr<PullResult>> pulls;
    std::vector<bool> waiting(3, false);  // a worker with a parked pull does nothing else
    std::vector<int> completed_at;
    for (int event = 0; event < 120; ++event) {
      const uint32_t w = static_cast<uint32_t>(rng() % 3);
      for (size_t i = 0; i < pulls.size(); ++i) {
        if (pulls[i]->done && completed_at[i] < 0) completed_at[i] = event;
      }
      for (uint32_t v = 0; v < 3; ++v) waiting[v] = false;
      for (size_t i = 0; i < pulls.size(); ++i) {
        if (!pulls[i]->done) waiting[pulls[i]->request.worker_id()] = true;
      }
      if (waiting[w]) continue;
      // One step of worker w: pull at its clock, push, tick.
      pulls.push_back(std::make_unique<PullResult>());
      completed_at.push_back(-1);
      StartPull(shard, pulls.back().get(), w, clock[w]);
      if (!pulls.back()->done) continue;  // resumes on a later event
      completed_at.back() = event;
      REQUIRE(shard.Push(Push(w, ++seq[w], clock[w])).ok());
      REQUIRE(shard.Clock(Tick(w, ++clock[w])).ok());
    }
    shard.Shutdown();  // fails the pulls still parked while `pulls` is alive
    return completed_at;
  };
  CHECK(trace(v1::CONSISTENCY_BSP) == trace(v1::CONSISTENCY_SSP));
}

TEST_CASE("a worker declared dead leaves the minimum and releases the pulls waiting for it",
          "[shard][membership]") {
  Shard shard(0, ScalarJob(v1::CONSISTENCY_BSP, 0), nullptr);
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}, {2, 0}}, 1)).ok());
  for (uint32_t w = 0; w < 3; ++w) REQUIRE(shard.Push(Push(w, 1, 0)).ok());
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());
  PullResult pull;
  StartPull(shard, &pull, 0, 1);
  CHECK_FALSE(pull.done);  // worker 2 never ticks: it was killed
  // The coordinator's next map lists workers 0 and 1 only.
  REQUIRE(shard.InstallMap(Map({{0, 1}, {1, 1}}, 2)).ok());
  REQUIRE(pull.done);
  REQUIRE(pull.status.ok());
  // Iteration 0 closes with the three pushes it got (aggregation sum).
  CHECK(pull.value() == -3.0f);
  // A tick from the dead worker is refused.
  v1::ClockRequest late = Tick(2, 1);
  late.set_map_version(2);
  CHECK(shard.Clock(late).status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("RELIABILITY T5: a zombie worker's pushes are refused once the map drops it, and "
          "change nothing",
          "[shard][membership][fencing]") {
  Shard shard(0, ScalarJob(v1::CONSISTENCY_ASP, 0), nullptr);
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}}, 1)).ok());
  REQUIRE(shard.Push(Push(0, 1, 0)).ok());
  REQUIRE(shard.Push(Push(1, 1, 0)).ok());
  auto value = [&shard] { return ValueAtClock0(shard); };
  CHECK(value() == -2.0f);

  // Worker 1 paused past its lease: the coordinator's next map drops it.
  REQUIRE(shard.InstallMap(Map({{0, 0}}, 2)).ok());
  for (uint64_t version : {1u, 2u}) {  // woken with its old map, or with the new one
    v1::PushRequest zombie = Push(1, 2, 1);
    zombie.set_map_version(version);
    const absl::StatusOr<bool> refused = shard.Push(zombie);
    CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(refused.status().message().find("push from worker 1 refused") != std::string::npos);
  }
  // A push naming a newer map than the server's may come from worker 1
  // registered again: retry once the server has that map.
  v1::PushRequest ahead = Push(1, 3, 1);
  ahead.set_map_version(3);
  CHECK(shard.Push(ahead).status().code() == absl::StatusCode::kUnavailable);
  CHECK(value() == -2.0f);  // nothing of worker 1 landed

  // The live worker goes on.
  REQUIRE(shard.Push(Push(0, 2, 1)).ok());
  CHECK(value() == -3.0f);

  // Registered again, worker 1 pushes like any member.
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}}, 3)).ok());
  REQUIRE(shard.Push(ahead).ok());
  CHECK(value() == -4.0f);

  // A worker that left is refused too.
  v1::ClockRequest leave = Tick(0, 2, /*leaving=*/true);
  leave.set_map_version(3);
  REQUIRE(shard.Clock(leave).ok());
  v1::PushRequest after_leave = Push(0, 3, 2);
  after_leave.set_map_version(3);
  CHECK(shard.Push(after_leave).status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(value() == -4.0f);
}

TEST_CASE("a late joiner starts at the server's minimum even when told an older clock",
          "[shard][membership]") {
  Shard shard(0, ScalarJob(v1::CONSISTENCY_BSP, 0), nullptr);
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}}, 1)).ok());
  for (int64_t t = 0; t < 5; ++t) {
    for (uint32_t w = 0; w < 2; ++w) {
      REQUIRE(shard.Push(Push(w, static_cast<uint64_t>(t + 1), t)).ok());
      REQUIRE(shard.Clock(Tick(w, t + 1)).ok());
    }
  }
  // The coordinator saw clock 3 in the last heartbeats and tells the joiner 3.
  REQUIRE(shard.InstallMap(Map({{0, 0}, {1, 0}, {7, 3}}, 2)).ok());
  v1::ClockRequest hello = Tick(7, 3);
  hello.set_map_version(2);
  absl::StatusOr<int64_t> min_clock = shard.Clock(hello);
  REQUIRE(min_clock.ok());
  CHECK(*min_clock == 5);  // not pulled back to 3
  // From clock 5 on, the joiner takes part in the barrier like the others.
  for (uint32_t w : {0u, 1u, 7u}) REQUIRE(shard.Push(Push(w, 100, 5)).ok());
  PullResult pull;
  StartPull(shard, &pull, 0, 6);
  REQUIRE(shard.Clock(Tick(0, 6)).ok());
  REQUIRE(shard.Clock(Tick(1, 6)).ok());
  CHECK_FALSE(pull.done);  // waits for the joiner's iteration 5
  REQUIRE(shard.Clock(Tick(7, 6)).ok());
  REQUIRE(pull.done);
  CHECK(pull.value() == -13.0f);  // 5 iterations of 2 pushes, then 3
}

TEST_CASE("the clock tracker's minimum ignores dead and departed workers", "[shard][clock]") {
  ClockTracker clocks;
  clocks.SetLiveWorkers({{0, 0}, {1, 0}, {2, 0}});
  REQUIRE(clocks.Tick(0, 4));
  REQUIRE(clocks.Tick(1, 2));
  CHECK(clocks.MinClock() == 0);
  CHECK(clocks.SlowestWorker() == 2);
  clocks.SetLiveWorkers({{0, 0}, {1, 0}});  // 2 declared dead
  CHECK(clocks.MinClock() == 2);
  clocks.Leave(1);
  CHECK(clocks.MinClock() == 4);
  CHECK_FALSE(clocks.Tick(1, 5));  // left for good
  clocks.SetLiveWorkers({{0, 0}, {1, 0}, {3, 1}});  // 1 stays out; 3 joins at min 4
  CHECK(clocks.NumLive() == 2);
  CHECK(clocks.ClockOf(3) == 4);
  clocks.SetLiveWorkers({});
  CHECK(clocks.MinClock() == ClockTracker::kNoWorkers);
}

TEST_CASE("a newer incarnation of a worker id replaces the old one, and one that left may come "
          "back",
          "[shard][clock][incarnation]") {
  ClockTracker clocks;
  clocks.SetLiveWorkers({{0, 0, 1}, {1, 0, 1}});
  REQUIRE(clocks.Tick(0, 6));
  REQUIRE(clocks.Tick(1, 4));
  // Worker 1 restarted under its id: a new process, entering at the minimum.
  clocks.SetLiveWorkers({{0, 0, 1}, {1, 0, 2}});
  CHECK(clocks.IncarnationOf(1) == 2);
  CHECK(clocks.ClockOf(1) == 4);
  // Worker 0 leaves; its incarnation 1 stays out, incarnation 2 comes back.
  clocks.Leave(0);
  clocks.SetLiveWorkers({{0, 0, 1}, {1, 0, 2}});
  CHECK_FALSE(clocks.IsLive(0));
  clocks.SetLiveWorkers({{0, 3, 2}, {1, 0, 2}});
  CHECK(clocks.IsLive(0));
  CHECK(clocks.ClockOf(0) == 4);  // the minimum, not its first life's 6
  // A map listing an older incarnation than one seen is stale: ignored.
  clocks.SetLiveWorkers({{0, 0, 1}, {1, 0, 2}});
  CHECK_FALSE(clocks.IsLive(0));
  CHECK(clocks.IncarnationOf(0) == 2);
}

// Map version `version` listing (id, incarnation) workers, each at clock 0.
v1::PartitionMap IncarnationMap(std::vector<std::pair<uint32_t, uint64_t>> workers,
                                uint64_t version) {
  std::vector<std::pair<uint32_t, int64_t>> at_zero;
  for (const auto& [id, incarnation] : workers) at_zero.emplace_back(id, 0);
  v1::PartitionMap map = Map(at_zero, version);
  for (int i = 0; i < map.workers_size(); ++i) {
    map.mutable_workers(i)->set_incarnation(workers[i].second);
  }
  return map;
}

v1::PushRequest PushAs(uint32_t worker, uint64_t incarnation, uint64_t seq, uint64_t version) {
  v1::PushRequest r = PushScalar(worker, seq, 0, 1.0f);
  r.set_incarnation(incarnation);
  r.set_map_version(version);
  return r;
}

TEST_CASE("a worker restarted under its id has every push applied and its old incarnation is "
          "refused",
          "[shard][incarnation]") {
  // ASP, lr 1: w -= 1 per push applied.
  Shard shard(0, ScalarJob(v1::CONSISTENCY_ASP, 0), nullptr);
  REQUIRE(shard.InstallMap(IncarnationMap({{0, 1}}, 1)).ok());
  auto value = [&shard] { return ValueAtClock0(shard); };
  for (uint64_t seq = 1; seq <= 10; ++seq) REQUIRE(shard.Push(PushAs(0, 1, seq, 1)).ok());
  CHECK(value() == -10.0f);

  // Killed, declared dead, started again: incarnation 2 numbers from 1.
  REQUIRE(shard.InstallMap(IncarnationMap({}, 2)).ok());
  REQUIRE(shard.InstallMap(IncarnationMap({{0, 2}}, 3)).ok());
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    absl::StatusOr<bool> duplicate = shard.Push(PushAs(0, 2, seq, 3));
    REQUIRE(duplicate.ok());
    CHECK_FALSE(*duplicate);  // before incarnations: a "duplicate" of the first life
  }
  CHECK(value() == -15.0f);
  // A retry within incarnation 2 is still applied once.
  absl::StatusOr<bool> again = shard.Push(PushAs(0, 2, 5, 3));
  REQUIRE(again.ok());
  CHECK(*again);

  // The first process, woken late, is refused, pushes and clocks alike.
  absl::Status old_push = shard.Push(PushAs(0, 1, 11, 3)).status();
  CHECK(old_push.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(old_push.message()),
             Catch::Contains("worker 0 incarnation 1 refused: the worker registered again since "
                             "(incarnation 2)"));
  v1::ClockRequest old_leave = Tick(0, 3, /*leaving=*/true, /*incarnation=*/1);
  old_leave.set_map_version(3);
  CHECK(shard.Clock(old_leave).status().code() == absl::StatusCode::kFailedPrecondition);
  // A push of an incarnation this server's map does not list yet: retry later.
  CHECK(shard.Push(PushAs(0, 3, 1, 4)).status().code() == absl::StatusCode::kUnavailable);
  CHECK(value() == -15.0f);
  // A push without an incarnation is malformed.
  CHECK(shard.Push(PushAs(0, 0, 1, 3)).status().code() == absl::StatusCode::kInvalidArgument);

  // It leaves cleanly, and joins again as incarnation 3.
  v1::ClockRequest leave = Tick(0, 3, /*leaving=*/true, /*incarnation=*/2);
  leave.set_map_version(3);
  REQUIRE(shard.Clock(leave).ok());
  CHECK(shard.Push(PushAs(0, 2, 6, 3)).status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(shard.InstallMap(IncarnationMap({{0, 3}}, 4)).ok());
  REQUIRE(shard.Push(PushAs(0, 3, 1, 4)).ok());
  v1::ClockRequest tick = Tick(0, 4, false, 3);
  tick.set_map_version(4);
  CHECK(shard.Clock(tick).ok());
  CHECK(value() == -16.0f);
}

}  // namespace cairn
