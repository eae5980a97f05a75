#include "common/busy_poll.h"

#include <sched.h>
#include <grpc/support/time.h>
#include <grpcpp/completion_queue.h>

namespace cairn {

PollResult PollUntil(grpc::CompletionQueue* cq, absl::Time until, void** tag, bool* ok,
                     SidePoll* side, absl::Time* found_at) {
  // A deadline already past makes gRPC look once at what it has, polling
  // its sockets with a zero timeout, and return.
  const gpr_timespec now = gpr_inf_past(GPR_CLOCK_MONOTONIC);
  absl::Time at = absl::Now();
  do {
    switch (cq->AsyncNext(tag, ok, now)) {
      case grpc::CompletionQueue::GOT_EVENT:
        if (found_at != nullptr) *found_at = at;
        return PollResult::kEvent;
      case grpc::CompletionQueue::SHUTDOWN:
        return PollResult::kShutdown;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
    if (side != nullptr && side->Poll()) {
      if (found_at != nullptr) *found_at = at;
      return PollResult::kSide;
    }
    // Any other thread that may run on this CPU goes first; with none,
    // this returns at once and the poll goes on.
    sched_yield();
    at = absl::Now();
  } while (at < until);
  return PollResult::kTimeout;
}

}  // namespace cairn
