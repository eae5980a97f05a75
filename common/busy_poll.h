// Polling a gRPC completion queue without sleeping, for a while, before a
// thread waits on it the usual way (rpc.busy_poll, docs/config.md).
//
// A thread that waits in CompletionQueue::Next sleeps in the kernel, and
// the answer it waits for must wake it: on a virtual machine that is the
// scheduler's wake-up and, when the CPU had gone idle, the hypervisor's.
// A step of a one-server job waits twice that way (the server for the
// push, the worker for the answer). Polling with a zero timeout keeps the
// thread on its CPU and takes the event as soon as gRPC has read it, as
// MPI libraries and kernel-bypass transports do while they wait. Between
// polls it yields its CPU (sched_yield) to any other thread that may run
// there: without the yield, 1 server + 2 workers polling on 2 CPUs ran
// 3.5x slower than sleeping; with it, faster (docs/benchmarks.md, "Polling
// before sleeping").
//
// Thread-safe as the queue is: any thread that may call Next may call it.
#ifndef CAIRN_COMMON_BUSY_POLL_H_
#define CAIRN_COMMON_BUSY_POLL_H_

#include "absl/time/time.h"

namespace grpc {
class CompletionQueue;
}  // namespace grpc

namespace cairn {

enum class PollResult {
  kEvent,     // *tag and *ok hold the event taken off the queue
  kTimeout,   // `until` passed with no event: wait with Next now
  kShutdown,  // the queue is shut down and drained
  kSide,      // `side` served something (SidePoll::Poll returned true)
};

// What a polling thread watches besides its queue: the call slots of
// workers' shared regions (common/call_slot.h). Called only from the one
// thread that polls.
class SidePoll {
 public:
  virtual ~SidePoll() = default;
  // Serves what arrived; true when it served anything.
  virtual bool Poll() = 0;
  // Told true while the thread polls, false before it sleeps in the
  // queue's Next (it then calls Poll once more before it sleeps).
  virtual void SetPolling(bool polling) = 0;
};

// Takes the next event off `cq`, polling without sleeping until `until`
// (absl::Now()'s clock) and yielding the CPU between polls. An `until` in
// the past still polls once. With `side`, each poll also runs side->Poll(),
// and returns kSide when that served something. With `found_at`, an event
// or a side's call is dated there by the start of the poll that found it
// (before the side served it): when it had arrived, within one poll.
PollResult PollUntil(grpc::CompletionQueue* cq, absl::Time until, void** tag, bool* ok,
                     SidePoll* side = nullptr, absl::Time* found_at = nullptr);

}  // namespace cairn

#endif  // CAIRN_COMMON_BUSY_POLL_H_
