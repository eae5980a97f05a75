// The completion queue of a worker's calls that no caller waits on: ticks,
// pushes and pulls started without a waiting caller (Client::Push/Pull),
// a shared region's offer. One thread of its own completes them, and it
// takes part in gRPC's polling only while such a call is in flight.
//
// Why not gRPC's callback API: once a process uses it at all, gRPC 1.51
// starts two threads that poll every socket of the process for as long as
// a channel that used it lives. Those threads then read the answers of the
// calls a waiting caller drives on its own queue (Client::PullAndWait,
// PushClockAndPull) and wake that caller: a hand-off and two more context
// switches on each call (docs/benchmarks.md, "No callback threads in the
// worker"). With this queue the caller that waits is the only thread
// polling while its call is in flight, as with a synchronous gRPC call,
// unless one of this queue's calls is in flight at the same time (a tick
// of another server, a Push future): its thread then polls too, and may
// read the caller's answer first.
#ifndef CAIRN_WORKER_CLIENT_CALL_QUEUE_H_
#define CAIRN_WORKER_CLIENT_CALL_QUEUE_H_

#include <memory>
#include <thread>

namespace grpc {
class CompletionQueue;
}  // namespace grpc

namespace cairn {

class CallQueue {
 public:
  // Starts the queue's thread; it waits, polling nothing, until Begin.
  CallQueue();
  // Completes the calls still in flight (each ends by its deadline), then
  // ends the thread. May run on the queue's own thread (the last reference
  // to the owner dropped by a call's `done`): the thread then ends once it
  // returns from that call.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  // Announces one operation whose tag (a CqTag, shard_channel.h) the
  // returned queue will deliver exactly once, and returns the queue to
  // start it on. The queue's thread completes the tag (CqTag::Complete)
  // and polls gRPC while at least one announced operation has not
  // completed. Thread-safe; may be called from a tag's Complete; not once
  // the destructor has begun (no owner is left to call it then).
  grpc::CompletionQueue* Begin();

 private:
  struct State;
  static void Drive(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CALL_QUEUE_H_
