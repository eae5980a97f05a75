#include "common/busy_poll.h"

#include <sched.h>
#include <grpc/support/time.h>
#include <grpcpp/completion_queue.h>

namespace cairn {

PollResult PollUntil(grpc::CompletionQueue* cq, absl::Time until, void** tag, bool* ok,
                     SidePoll* side) {
  // A deadline already past makes gRPC look once at what it has, polling
  // its sockets with a zero timeout, and return.
  const gpr_timespec now = gpr_inf_past(GPR_CLOCK_MONOTONIC);
  do {
    switch (cq->AsyncNext(tag, ok, now)) {
      case grpc::CompletionQueue::GOT_EVENT:
        return PollResult::kEvent;
      case grpc::CompletionQueue::SHUTDOWN:
        return PollResult::kShutdown;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
    if (side != nullptr && side->Poll()) return PollResult::kSide;
    // Any other thread that may run on this CPU goes first; with none,
    // this returns at once and the poll goes on.
    sched_yield();
  } while (absl::Now() < until);
  return PollResult::kTimeout;
}

}  // namespace cairn
