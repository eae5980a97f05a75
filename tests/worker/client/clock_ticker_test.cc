// A worker's clock ticks (worker/client/clock_ticker.h) against fake servers
// (tests/fakes/fake_shard.h): what each tick carries, a retriable failure
// sent again after a map refresh, the first failure kept, and no retry once
// the worker is lost.
#include "worker/client/clock_ticker.h"

#include <grpcpp/support/status.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "common/status_conversion.h"
#include "common/work_queue.h"
#include "tests/fakes/fake_shard.h"

namespace cairn {
namespace {

constexpr uint64_t kMapVersion = 4;

// Two fake servers; server 1 can be marked gone. An executor thread runs
// what the ticker posts.
struct Rig {
  Rig() {
    for (uint32_t id : {0u, 1u}) {
      servers[id] = std::make_shared<FakeShard>(id, v1::JobSpec(), kMapVersion);
    }
    executor = std::thread([this] {
      while (std::optional<std::function<void()>> task = tasks.Pop()) (*task)();
    });
  }
  ~Rig() {
    ticker.reset();  // drains first: retries still post
    tasks.Close();
    executor.join();
  }

  ClockTicker& Ticker() {
    ticker = std::make_unique<ClockTicker>(
        ClockTicker::Hooks{
            .route =
                [this](uint32_t server) {
                  if (server == 1 && gone.load()) return ClockTicker::Route{};
                  return ClockTicker::Route{servers.at(server), kMapVersion};
                },
            .refresh_map =
                [this] {
                  ++refreshes;
                  return absl::OkStatus();
                },
            .post = [this](std::function<void()> task) { tasks.Push(std::move(task)); },
            .lost =
                [this] {
                  return lost.load() ? absl::UnavailableError("declared dead") : absl::OkStatus();
                },
        },
        /*worker_id=*/3, /*incarnation=*/2, absl::Seconds(5));
    return *ticker;
  }

  std::map<uint32_t, std::shared_ptr<FakeShard>> servers;
  std::atomic<bool> gone{false};
  std::atomic<bool> lost{false};
  std::atomic<int> refreshes{0};
  WorkQueue<std::function<void()>> tasks;
  std::thread executor;
  std::unique_ptr<ClockTicker> ticker;
};

TEST_CASE("ClockTicker sends each tick to its server with the worker's id, incarnation and map") {
  Rig rig;
  ClockTicker& ticks = rig.Ticker();
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  for (int64_t clock : {1, 2, 3}) {
    ticks.Send(0, clock, give_up);
    ticks.Send(1, clock, give_up);
  }
  REQUIRE(ticks.Drain().ok());
  for (uint32_t id : {0u, 1u}) {
    const std::vector<v1::ClockRequest> sent = rig.servers[id]->clocks();
    REQUIRE(sent.size() == 3);
    std::set<int64_t> clocks;
    for (const v1::ClockRequest& r : sent) {
      clocks.insert(r.clock());
      CHECK(r.worker_id() == 3);
      CHECK(r.incarnation() == 2);
      CHECK(r.map_version() == kMapVersion);
      CHECK_FALSE(r.leaving());
    }
    CHECK(clocks == std::set<int64_t>{1, 2, 3});
  }
  CHECK(rig.refreshes.load() == 0);
}

TEST_CASE("ClockTicker sends a tick again after a map refresh when the server was unavailable") {
  Rig rig;
  ClockTicker& ticks = rig.Ticker();
  rig.servers[1]->FailNext(FakeShard::Rpc::kClock,
                           grpc::Status(grpc::StatusCode::UNAVAILABLE, "failing over"), 2);
  ticks.Send(1, 7, absl::Now() + absl::Seconds(5));
  REQUIRE(ticks.Drain().ok());
  const std::vector<v1::ClockRequest> sent = rig.servers[1]->clocks();
  REQUIRE(sent.size() == 3);  // two refused, the third taken
  for (const v1::ClockRequest& r : sent) CHECK(r.clock() == 7);
  CHECK(rig.refreshes.load() == 2);
}

TEST_CASE("ClockTicker keeps the first failure, naming the server, and a stale map is retried") {
  Rig rig;
  ClockTicker& ticks = rig.Ticker();
  rig.servers[0]->FailNext(FakeShard::Rpc::kClock, StaleMapStatus(kMapVersion - 1, kMapVersion));
  rig.servers[1]->FailNext(FakeShard::Rpc::kClock,
                           grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not a member"));
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  ticks.Send(0, 1, give_up);
  ticks.Send(1, 1, give_up);
  const absl::Status error = ticks.Drain();
  CHECK(absl::IsFailedPrecondition(error));
  CHECK(absl::StrContains(error.message(), "clock to server 1"));
  CHECK(rig.servers[0]->clocks().size() == 2);  // the stale one, then the retry
  CHECK(rig.servers[1]->clocks().size() == 1);  // not retried
  // A later failure does not replace it.
  rig.servers[0]->FailNext(FakeShard::Rpc::kClock,
                           grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad clock"));
  ticks.Send(0, 2, give_up);
  CHECK(absl::IsFailedPrecondition(ticks.Drain()));
  CHECK(absl::IsFailedPrecondition(ticks.error()));
}

TEST_CASE("ClockTicker sends nothing to a server that is gone, and stops retrying once lost") {
  Rig rig;
  ClockTicker& ticks = rig.Ticker();
  rig.gone.store(true);
  ticks.Send(1, 1, absl::Now() + absl::Seconds(5));
  CHECK(ticks.Drain().ok());
  CHECK(rig.servers[1]->clocks().empty());

  rig.lost.store(true);
  rig.servers[0]->FailNext(FakeShard::Rpc::kClock,
                           grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"), 5);
  ticks.Send(0, 1, absl::Now() + absl::Seconds(5));
  const absl::Status error = ticks.Drain();
  CHECK(absl::IsUnavailable(error));
  CHECK(absl::StrContains(error.message(), "declared dead"));
  CHECK(rig.servers[0]->clocks().size() == 1);
  CHECK(rig.refreshes.load() == 0);
}

TEST_CASE("ClockTicker gives up on a retriable failure at its deadline") {
  Rig rig;
  ClockTicker& ticks = rig.Ticker();
  rig.servers[0]->FailNext(FakeShard::Rpc::kClock,
                           grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"), 1000);
  // 50 ms, then 100 ms of backoff fit in 200 ms; the next wait does not.
  ticks.Send(0, 1, absl::Now() + absl::Milliseconds(200));
  const absl::Status error = ticks.Drain();
  CHECK(absl::IsUnavailable(error));
  CHECK(absl::StrContains(error.message(), "clock to server 0"));
  const size_t sent = rig.servers[0]->clocks().size();
  CHECK(sent >= 2);
  CHECK(sent <= 3);
}

}  // namespace
}  // namespace cairn
