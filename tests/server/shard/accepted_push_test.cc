// Shard::Push's `accepted`: a plain SSP or ASP push answered before its
// update, and the reads that wait for that update (a pull, a tick, Stats).
// The answer here holds its update back: it starts a reader on another
// thread and sleeps, and the reader must not finish before the update is
// done.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "common/bytes.h"
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

constexpr absl::Duration kHeld = absl::Milliseconds(200);

// Pushes `request` with an answer that runs `reader` on another thread and
// holds the update back for kHeld. Returns whether the answer was given;
// `reader_done_early` tells whether the reader finished while it was held.
struct Answered {
  bool answered = false;
  bool reader_done_early = false;
  absl::StatusOr<bool> pushed = false;
};
Answered PushHeld(Shard& shard, const v1::PushRequest& request,
                  std::function<void()> reader = nullptr) {
  Answered out;
  std::atomic<bool> reader_done{false};
  std::thread thread;
  out.pushed = shard.Push(request, {}, nullptr, nullptr, nullptr, [&] {
    out.answered = true;
    if (reader) {
      thread = std::thread([&] {
        reader();
        reader_done.store(true);
      });
    }
    absl::SleepFor(kHeld);
    out.reader_done_early = reader_done.load();
  });
  if (thread.joinable()) thread.join();
  return out;
}

TEST_CASE("an ASP push answered when accepted is applied before a pull that starts after",
          "[shard][push_ack]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  PullResult pull;
  const Answered a = PushHeld(shard, PushScalar(0, 1, 0, 1.0f), [&] {
    StartPull(shard, &pull, 1, 0);
  });
  REQUIRE(a.pushed.ok());
  CHECK_FALSE(*a.pushed);  // applied, not a duplicate
  CHECK(a.answered);
  CHECK_FALSE(a.reader_done_early);  // the pull waited for the update
  REQUIRE(pull.done);
  REQUIRE(pull.status.ok());
  CHECK(pull.value() == -1.0f);  // and read it
  // The same sequence again: a duplicate, applied once, not answered early.
  const Answered again = PushHeld(shard, PushScalar(0, 1, 0, 1.0f));
  REQUIRE(again.pushed.ok());
  CHECK(*again.pushed);
  CHECK_FALSE(again.answered);
}

TEST_CASE("an SSP tick and Stats after a push answered when accepted wait for its update",
          "[shard][push_ack]") {
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_SSP, v1::AGGREGATION_MEAN, 1)}),
              nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  const Answered ticked = PushHeld(shard, PushScalar(0, 1, 0, 1.0f), [&] {
    REQUIRE(shard.Clock(Tick(0, 1)).ok());
  });
  REQUIRE(ticked.pushed.ok());
  CHECK(ticked.answered);
  CHECK_FALSE(ticked.reader_done_early);
  v1::StatsResponse stats;
  const Answered counted = PushHeld(shard, PushScalar(0, 2, 1, 1.0f), [&] {
    shard.Stats(&stats);
  });
  CHECK(counted.answered);
  CHECK_FALSE(counted.reader_done_early);
  PullResult pull;
  StartPull(shard, &pull, 0, 1);
  REQUIRE(pull.done);
  CHECK(pull.value() == -2.0f);
}

TEST_CASE("a push is answered once applied when it ticks, carries a pull, is BSP, is refused "
          "or has a backup to reach",
          "[shard][push_ack]") {
  SECTION("BSP") {
    Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_BSP)}), nullptr);
    REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
    const Answered a = PushHeld(shard, PushScalar(0, 1, 0, 1.0f));
    REQUIRE(a.pushed.ok());
    CHECK_FALSE(a.answered);
  }
  Shard shard(0, Job({ScalarTable("w", v1::CONSISTENCY_ASP)}), nullptr);
  SECTION("a tick riding on the push") {
    REQUIRE(shard.InstallMap(Map(4, {0})).ok());
    v1::PushRequest push = PushScalar(0, 1, 0, 1.0f);
    push.set_end_clock(1);
    const Answered a = PushHeld(shard, push);
    REQUIRE(a.pushed.ok());
    CHECK_FALSE(a.answered);
  }
  SECTION("a pull riding on the push") {
    REQUIRE(shard.InstallMap(Map(4, {0})).ok());
    v1::PushRequest push = PushScalar(0, 1, 0, 1.0f);
    push.mutable_pull()->set_worker_id(0);
    const Answered a = PushHeld(shard, push);
    REQUIRE(a.pushed.ok());
    CHECK_FALSE(a.answered);
  }
  SECTION("a value that is not finite: refused, never answered") {
    REQUIRE(shard.InstallMap(Map(4, {0})).ok());
    const Answered a =
        PushHeld(shard, PushScalar(0, 1, 0, std::numeric_limits<float>::quiet_NaN()));
    CHECK(absl::IsInvalidArgument(a.pushed.status()));
    CHECK_FALSE(a.answered);
  }
  SECTION("a group with a backup") {
    v1::PartitionMap map = Map(4, {0});
    for (v1::PartitionAssignment& p : *map.mutable_assignments()) p.add_backups(1);
    v1::Member* backup = map.add_servers();
    backup->set_id(1);
    backup->set_role(v1::MEMBER_ROLE_SERVER);
    backup->set_state(v1::MEMBER_STATE_ALIVE);
    backup->set_address("127.0.0.1:1");
    REQUIRE(shard.InstallMap(map).ok());
    const Answered a = PushHeld(shard, PushScalar(0, 1, 0, 1.0f));
    REQUIRE(a.pushed.ok());
    CHECK_FALSE(a.answered);
  }
}

}  // namespace
}  // namespace cairn
