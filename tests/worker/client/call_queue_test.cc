// The worker's queue for calls nobody waits on (worker/client/call_queue.h):
// each operation completes once, on the queue's thread; destruction waits
// for those in flight, even from that thread.
#include "worker/client/call_queue.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "worker/client/shard_channel.h"

namespace cairn {
namespace {

// A tag that runs `on_complete` with Next's `ok`.
class FnTag final : public CqTag {
 public:
  explicit FnTag(std::function<void(bool)> on_complete) : on_complete_(std::move(on_complete)) {}
  void Complete(bool ok) override { on_complete_(ok); }

 private:
  std::function<void(bool)> on_complete_;
};

gpr_timespec In(std::chrono::milliseconds ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(ms.count(), GPR_TIMESPAN));
}

TEST_CASE("a call queue completes each operation once, on its own thread", "[client]") {
  CallQueue queue;
  constexpr int kOps = 50;
  std::atomic<int> completed{0};
  std::atomic<bool> all_ok{true};
  std::atomic<bool> off_caller{true};
  const std::thread::id caller = std::this_thread::get_id();
  absl::Notification last;
  FnTag tag([&](bool ok) {
    if (!ok) all_ok = false;
    if (std::this_thread::get_id() == caller) off_caller = false;
    if (completed.fetch_add(1) + 1 == kOps) last.Notify();
  });
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;
  // Announced in bursts, with the queue idle in between.
  for (int burst = 0; burst < 5; ++burst) {
    for (int i = 0; i < kOps / 5; ++i) {
      alarms.push_back(std::make_unique<grpc::Alarm>());
      alarms.back()->Set(queue.Begin(), In(std::chrono::milliseconds(i % 3)), &tag);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(last.WaitForNotificationWithTimeout(absl::Seconds(30)));
  CHECK(completed.load() == kOps);
  CHECK(all_ok.load());
  CHECK(off_caller.load());
}

TEST_CASE("a call queue's destructor waits for the operations in flight", "[client]") {
  std::atomic<int> completed{0};
  FnTag tag([&](bool) { completed.fetch_add(1); });
  grpc::Alarm first;
  grpc::Alarm second;
  {
    CallQueue queue;
    first.Set(queue.Begin(), In(std::chrono::milliseconds(100)), &tag);
    second.Set(queue.Begin(), In(std::chrono::milliseconds(200)), &tag);
  }
  CHECK(completed.load() == 2);
}

TEST_CASE("a call queue may be destroyed by an operation it completes", "[client]") {
  auto queue = std::make_unique<CallQueue>();
  absl::Notification destroyed;
  std::atomic<bool> on_queue_thread{false};
  const std::thread::id caller = std::this_thread::get_id();
  FnTag tag([&](bool) {
    on_queue_thread = std::this_thread::get_id() != caller;
    queue.reset();  // the queue's last owner dropped on its own thread
    destroyed.Notify();
  });
  grpc::Alarm alarm;
  alarm.Set(queue->Begin(), In(std::chrono::milliseconds(10)), &tag);
  REQUIRE(destroyed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  CHECK(on_queue_thread.load());
  CHECK(queue == nullptr);
}

}  // namespace
}  // namespace cairn
