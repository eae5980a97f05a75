// The worker's queue for calls nobody waits on (worker/client/call_queue.h):
// each operation completes once, on the queue's thread; an idle queue polls
// nothing; destruction waits for those in flight, even from that thread.
#include "worker/client/call_queue.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
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
  std::vector<std::atomic<int>> completions(kOps);
  std::atomic<int> completed{0};
  std::atomic<bool> all_ok{true};
  std::atomic<bool> off_caller{true};
  const std::thread::id caller = std::this_thread::get_id();
  absl::Notification last;
  std::vector<std::unique_ptr<FnTag>> tags;
  for (int i = 0; i < kOps; ++i) {
    tags.push_back(std::make_unique<FnTag>([&, i](bool ok) {
      completions[i].fetch_add(1);
      if (!ok) all_ok = false;
      if (std::this_thread::get_id() == caller) off_caller = false;
      if (completed.fetch_add(1) + 1 == kOps) last.Notify();
    }));
  }
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;
  // Announced in bursts, with the queue idle in between.
  for (int burst = 0; burst < 5; ++burst) {
    for (int j = 0; j < kOps / 5; ++j) {
      const int i = burst * (kOps / 5) + j;
      alarms.push_back(std::make_unique<grpc::Alarm>());
      alarms.back()->Set(queue.Begin(), In(std::chrono::milliseconds(j % 3)), tags[i].get());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(last.WaitForNotificationWithTimeout(absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a late second completion
  for (int i = 0; i < kOps; ++i) {
    INFO("operation " << i);
    CHECK(completions[i].load() == 1);
  }
  CHECK(all_ok.load());
  CHECK(off_caller.load());
}

TEST_CASE("an idle call queue's thread waits outside gRPC, polling nothing", "[client]") {
  CallQueue queue;
  std::atomic<pid_t> tid{0};
  absl::Notification done;
  FnTag tag([&](bool) {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    done.Notify();
  });
  grpc::Alarm alarm;
  alarm.Set(queue.Begin(), In(std::chrono::milliseconds(1)), &tag);
  REQUIRE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The system call the thread is blocked in (proc(5), /proc/[pid]/syscall):
  // the futex of the queue's mutex, not an epoll_wait of gRPC's poller.
  std::ifstream in("/proc/self/task/" + std::to_string(tid.load()) + "/syscall");
  long number = -1;
  in >> number;
  INFO("the queue's thread is in system call " << number);
  CHECK(number == SYS_futex);
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

TEST_CASE("a call queue may be destroyed by an operation it completes, and still completes "
          "the ones in flight",
          "[client]") {
  auto queue = std::make_unique<CallQueue>();
  absl::Notification destroyed;
  absl::Notification later_done;
  std::atomic<bool> on_queue_thread{false};
  const std::thread::id caller = std::this_thread::get_id();
  FnTag tag([&](bool) {
    on_queue_thread = std::this_thread::get_id() != caller;
    queue.reset();  // the queue's last owner dropped on its own thread
    destroyed.Notify();
  });
  FnTag later([&](bool) { later_done.Notify(); });
  grpc::Alarm alarm;
  grpc::Alarm later_alarm;
  alarm.Set(queue->Begin(), In(std::chrono::milliseconds(10)), &tag);
  later_alarm.Set(queue->Begin(), In(std::chrono::milliseconds(200)), &later);
  REQUIRE(destroyed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  CHECK(on_queue_thread.load());
  CHECK(queue == nullptr);
  CHECK(later_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace cairn
