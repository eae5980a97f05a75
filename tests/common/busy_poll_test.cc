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
  const absl::Time set = absl::Now();
  AlarmedQueue q(absl::Milliseconds(20));
  absl::Time found_at;
  REQUIRE(PollUntil(&q.cq, absl::Now() + absl::Seconds(30), &q.tag, &q.ok, nullptr, &found_at) ==
          PollResult::kEvent);
  const absl::Time returned = absl::Now();
  CHECK(q.tag == &q.marker);
  CHECK(q.ok);
  // Dated by the poll that found it: after the alarm was due, by then.
  CHECK(found_at >= set + absl::Milliseconds(20));
  CHECK(found_at <= returned);
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

// Calls through a side (a call slot's stand-in) that come at a steady pace,
// later than the polling window: posted only while the loop's thread polls,
// else sent as an event on its queue (as a worker withdraws its call from
// the slot and sends it through gRPC when the server sleeps).
class PacedSide final : public SidePoll {
 public:
  bool Poll() override {
    if (!posted_.exchange(false)) return false;
    served_.fetch_add(1);
    return true;
  }
  void SetPolling(bool polling) override { polling_.store(polling); }

  // Posts one call; false when the loop's thread did not poll for it (the
  // call is withdrawn: the caller sends it the other way).
  bool Post() {
    posted_.store(true);
    if (polling_.load()) return true;
    return !posted_.exchange(false);  // taken in between: served
  }
  int served() const { return served_.load(); }

 private:
  std::atomic<bool> posted_{false};
  std::atomic<bool> polling_{false};
  std::atomic<int> served_{0};
};

TEST_CASE("a completion loop polls again when calls later than its window are due",
          "[busy_poll]") {
  // The loop polls 5 ms after each call; calls come every 40 ms. Without
  // polling again the thread sleeps through every one of them.
  PacedSide side;
  CompletionLoop loop;
  loop.StartPolling(absl::Milliseconds(5), &side);
  constexpr int kCalls = 24;
  int through_queue = 0;
  std::atomic<int> queue_ran{0};
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;
  absl::Time due = absl::Now();
  for (int i = 0; i < kCalls; ++i) {
    due += absl::Milliseconds(40);
    absl::SleepFor(due - absl::Now());
    if (side.Post()) continue;
    ++through_queue;
    alarms.push_back(std::make_unique<grpc::Alarm>());
    alarms.back()->Set(loop.cq(), Deadline(absl::ZeroDuration()),
                       CompletionLoop::Once([&](bool) { queue_ran.fetch_add(1); }));
  }
  // Every call is served, one way or the other.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while ((side.served() + queue_ran.load() < kCalls) && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  loop.Shutdown();
  CHECK(side.served() + queue_ran.load() == kCalls);
  CHECK(queue_ran.load() == through_queue);
  // Once the pace is learned (8 calls), most are found polling.
  INFO("calls through the queue: " << through_queue << " of " << kCalls);
  CHECK(through_queue <= 8 + (kCalls - 8) / 2);
}

}  // namespace
}  // namespace cairn
