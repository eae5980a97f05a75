// PollUntil (common/busy_poll.h) on real gRPC completion queues, and a
// CompletionLoop whose threads poll before they sleep (rpc.busy_poll).
#include "common/busy_poll.h"

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/completion_loop.h"

namespace cairn {
namespace {

gpr_timespec Deadline(absl::Duration from_now) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(absl::ToInt64Milliseconds(from_now), GPR_TIMESPAN));
}

// Takes whatever is left on `cq` so it can be destroyed.
void Drain(grpc::CompletionQueue* cq) {
  cq->Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
  }
}

// A queue with one alarm on it, due `due` from now, whose tag is &marker;
// drained when the test ends.
struct AlarmedQueue {
  explicit AlarmedQueue(absl::Duration due) { alarm.Set(&cq, Deadline(due), &marker); }
  ~AlarmedQueue() {
    alarm.Cancel();  // nothing if it has gone off
    Drain(&cq);
  }

  grpc::CompletionQueue cq;
  grpc::Alarm alarm;
  int marker = 0;
  void* tag = nullptr;
  bool ok = false;
};

TEST_CASE("PollUntil takes an event that comes while it polls", "[busy_poll]") {
  AlarmedQueue q(absl::Milliseconds(20));
  REQUIRE(PollUntil(&q.cq, absl::Now() + absl::Seconds(30), &q.tag, &q.ok) ==
          PollResult::kEvent);
  CHECK(q.tag == &q.marker);
  CHECK(q.ok);
}

TEST_CASE("PollUntil gives up once its time has passed, with no event taken", "[busy_poll]") {
  AlarmedQueue q(absl::Seconds(60));
  const absl::Time until = absl::Now() + absl::Milliseconds(10);
  CHECK(PollUntil(&q.cq, until, &q.tag, &q.ok) == PollResult::kTimeout);
  CHECK(absl::Now() >= until);
  CHECK(q.tag == nullptr);
  // A time already past still looks once, and finds nothing due.
  CHECK(PollUntil(&q.cq, absl::InfinitePast(), &q.tag, &q.ok) == PollResult::kTimeout);
  // The alarm's event is still there for the queue's next taker.
  q.alarm.Cancel();
  REQUIRE(q.cq.Next(&q.tag, &q.ok));
  CHECK(q.tag == &q.marker);
  CHECK_FALSE(q.ok);
}

TEST_CASE("PollUntil reports a queue shut down and drained", "[busy_poll]") {
  grpc::CompletionQueue cq;
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  CHECK(PollUntil(&cq, absl::Now() + absl::Seconds(30), &tag, &ok) == PollResult::kShutdown);
}

TEST_CASE("a completion loop that polls runs every tag, early and late, and shuts down",
          "[busy_poll]") {
  for (int threads : {1, 2}) {
    INFO(threads << " thread(s)");
    CompletionLoop loop;
    loop.Start(threads, absl::Milliseconds(5));
    constexpr int kTags = 6;
    std::atomic<int> ran{0};
    absl::Notification all_ran;
    std::vector<std::unique_ptr<grpc::Alarm>> alarms;
    // Some due within the polling window, some long after it, when the
    // threads sleep in Next.
    const absl::Duration delays[kTags] = {absl::ZeroDuration(),   absl::Milliseconds(1),
                                          absl::Milliseconds(2),  absl::Milliseconds(50),
                                          absl::Milliseconds(120), absl::Milliseconds(121)};
    for (absl::Duration delay : delays) {
      alarms.push_back(std::make_unique<grpc::Alarm>());
      alarms.back()->Set(loop.cq(), Deadline(delay), CompletionLoop::Once([&](bool ok) {
        CHECK(ok);
        if (ran.fetch_add(1) + 1 == kTags) all_ran.Notify();
      }));
    }
    REQUIRE(all_ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
    loop.Shutdown();
    CHECK(ran.load() == kTags);
  }
}

}  // namespace
}  // namespace cairn
