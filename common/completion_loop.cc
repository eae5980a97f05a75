#include "common/completion_loop.h"

#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <utility>

#include "common/busy_poll.h"

namespace cairn {
namespace {

class OnceTag final : public CompletionLoop::Tag {
 public:
  explicit OnceTag(std::function<void(bool)> proceed) : proceed_(std::move(proceed)) {}
  void Proceed(bool ok) override {
    std::function<void(bool)> proceed = std::move(proceed_);
    delete this;
    proceed(ok);
  }

 private:
  std::function<void(bool)> proceed_;
};

}  // namespace

CompletionLoop::Tag* CompletionLoop::Once(std::function<void(bool ok)> proceed) {
  return new OnceTag(std::move(proceed));
}

CompletionLoop::CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : server_cq_(cq.get()) {
  cq_ = std::move(cq);
}

CompletionLoop::CompletionLoop()
    : cq_(std::make_unique<grpc::CompletionQueue>()), server_cq_(nullptr) {}

CompletionLoop::~CompletionLoop() { Shutdown(); }

grpc::CompletionQueue* CompletionLoop::cq() const { return cq_.get(); }

void CompletionLoop::Start(int threads, absl::Duration busy_poll) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this, busy_poll] { Run(busy_poll, nullptr); });
  }
}

void CompletionLoop::StartPolling(absl::Duration busy_poll, SidePoll* side) {
  threads_.emplace_back([this, busy_poll, side] { Run(busy_poll, side); });
}

void CompletionLoop::Run(absl::Duration busy_poll, SidePoll* side) {
  void* tag = nullptr;
  bool ok = false;
  if (busy_poll <= absl::ZeroDuration()) {
    while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
    return;
  }
  if (side != nullptr) side->SetPolling(true);
  for (;;) {
    // The window starts again after each tag: the next call of a worker
    // that just got its answer comes a step later.
    switch (PollUntil(cq_.get(), absl::Now() + busy_poll, &tag, &ok, side)) {
      case PollResult::kShutdown:
        if (side != nullptr) side->SetPolling(false);
        return;
      case PollResult::kSide:
        continue;
      case PollResult::kTimeout:
        if (side != nullptr) {
          // Told first, then looked at once more: a call posted before
          // the side saw `false` is served here (common/call_slot.h).
          side->SetPolling(false);
          if (side->Poll()) {
            side->SetPolling(true);
            continue;
          }
        }
        if (!cq_->Next(&tag, &ok)) return;
        if (side != nullptr) side->SetPolling(true);
        break;
      case PollResult::kEvent:
        break;
    }
    static_cast<Tag*>(tag)->Proceed(ok);
  }
}

void CompletionLoop::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  cq_->Shutdown();
  if (!threads_.empty()) {
    for (std::thread& t : threads_) t.join();
    return;
  }
  // Never started: drain here (a queue is destroyed only once drained).
  Run(absl::ZeroDuration(), nullptr);
}

}  // namespace cairn
