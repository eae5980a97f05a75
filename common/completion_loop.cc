#include "common/completion_loop.h"

#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/busy_poll.h"
#include "common/poll_ahead.h"

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
  // The window starts again after each tag: the next call of a worker that
  // just got its answer comes a step later. When the calls come later than
  // the window, at a steady pace, the thread sleeps until the next is due
  // and polls on either side of it (poll_ahead.h).
  PollAhead ahead(busy_poll);
  absl::Time idle_since = absl::Now();     // the end of the last tag
  absl::Time poll_until = idle_since + busy_poll;
  bool polled_again = false;  // this wait's span around the due call is over
  // A tag or a side's call found at `at` ends the wait; once it has run,
  // the next wait starts.
  auto ended = [&](absl::Time at) { ahead.Record(at - idle_since); };
  auto wait_again = [&] {
    idle_since = absl::Now();
    poll_until = idle_since + busy_poll;
    polled_again = false;
  };
  if (side != nullptr) side->SetPolling(true);
  for (;;) {
    absl::Time found_at;
    switch (PollUntil(cq_.get(), poll_until, &tag, &ok, side, &found_at)) {
      case PollResult::kShutdown:
        if (side != nullptr) side->SetPolling(false);
        return;
      case PollResult::kSide:
        ended(found_at);
        wait_again();
        continue;
      case PollResult::kEvent:
        break;
      case PollResult::kTimeout: {
        std::optional<PollAhead::Span> span;
        if (!polled_again) span = ahead.Again(idle_since);
        polled_again = true;
        const absl::Time now = absl::Now();
        if (span.has_value() && span->until > now && span->from <= now) {
          poll_until = span->until;  // due already: poll on
          continue;
        }
        if (side != nullptr) {
          // Told first, then looked at once more: a call posted before
          // the side saw `false` is served here (common/call_slot.h).
          side->SetPolling(false);
          if (side->Poll()) {
            side->SetPolling(true);
            ended(now);
            wait_again();
            continue;
          }
        }
        if (span.has_value() && span->until > now) {
          // Asleep until the call is due, unless an event comes first. The
          // sleep ends a window early: a timed wait in gRPC's queue woke up
          // to 1.7 ms late on a 2-CPU virtual machine (its timeouts are whole
          // milliseconds, and the hypervisor's timer adds its own).
          const grpc::CompletionQueue::NextStatus woke =
              cq_->AsyncNext(&tag, &ok, absl::ToChronoTime(span->from - busy_poll));
          if (woke == grpc::CompletionQueue::SHUTDOWN) return;
          if (side != nullptr) side->SetPolling(true);
          if (woke == grpc::CompletionQueue::TIMEOUT) {
            poll_until = span->until;
            continue;
          }
        } else {
          if (!cq_->Next(&tag, &ok)) return;
          if (side != nullptr) side->SetPolling(true);
        }
        found_at = absl::Now();
        break;
      }
    }
    ended(found_at);
    static_cast<Tag*>(tag)->Proceed(ok);
    wait_again();
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
