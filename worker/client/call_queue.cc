#include "worker/client/call_queue.h"

#include <grpcpp/grpcpp.h>

#include <cassert>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "worker/client/shard_channel.h"

namespace cairn {

struct CallQueue::State {
  grpc::CompletionQueue cq;
  absl::Mutex mu;
  int in_flight ABSL_GUARDED_BY(mu) = 0;  // announced (Begin), not completed
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // Waits until there is something to poll for: an operation in flight, or
  // the end (the queue, shut down, then answers Next at once).
  void AwaitWork() ABSL_LOCKS_EXCLUDED(mu) {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](State* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
          return s->in_flight > 0 || s->stopping;
        },
        this));
  }
};

CallQueue::CallQueue() : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_] { Drive(state); });
}

CallQueue::~CallQueue() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = true;
  }
  // No operation starts after this (its owner is gone); Next delivers
  // those in flight, then reports the queue drained.
  state_->cq.Shutdown();
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // Drive holds the state and ends after this call returns
  } else {
    thread_.join();
  }
}

grpc::CompletionQueue* CallQueue::Begin() {
  absl::MutexLock lock(&state_->mu);
  assert(!state_->stopping && "an operation announced on a CallQueue being destroyed");
  ++state_->in_flight;
  return &state_->cq;
}

void CallQueue::Drive(const std::shared_ptr<State>& state) {
  while (true) {
    state->AwaitWork();
    void* tag = nullptr;
    bool ok = false;
    if (!state->cq.Next(&tag, &ok)) return;  // shut down and drained
    static_cast<CqTag*>(tag)->Complete(ok);
    absl::MutexLock lock(&state->mu);
    --state->in_flight;
  }
}

}  // namespace cairn
