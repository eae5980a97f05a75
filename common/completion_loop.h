// A thread (or a few) that drives a gRPC completion queue of gRPC's
// asynchronous API: every operation started on the queue (a server's wait
// for its next call, a reply's Finish, a client call's Finish) completes by
// running its tag's Proceed on a thread of the loop.
//
// Why a server uses this rather than gRPC's callback API: once a process
// registers a callback method (or makes a callback call), gRPC 1.51 runs two
// threads that take turns polling every socket of the process, and hands
// the poller role from one to the other on each request (a condition signal
// and a wake-up of the other thread). With one thread driving one queue,
// and no other thread waiting in gRPC, that thread reads a request off the
// socket, handles it and writes the answer with no hand-off
// (docs/benchmarks.md, "One thread serving the data path").
#ifndef CAIRN_COMMON_COMPLETION_LOOP_H_
#define CAIRN_COMMON_COMPLETION_LOOP_H_

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace grpc {
class CompletionQueue;
class ServerCompletionQueue;
}  // namespace grpc

namespace cairn {

class SidePoll;

class CompletionLoop {
 public:
  // What an operation started on the loop's queue completes into. `ok`: as
  // gRPC reports it (false: the call was cancelled, the server or the queue
  // is shutting down). Runs on the loop's thread, exactly once per
  // operation; it may start further operations and delete itself.
  class Tag {
   public:
    virtual void Proceed(bool ok) = 0;

   protected:
    ~Tag() = default;
  };

  // A tag that runs `proceed` once and deletes itself: for a client call's
  // Finish. Pass the result as the operation's tag.
  static Tag* Once(std::function<void(bool ok)> proceed);

  // Drives `cq` (from grpc::ServerBuilder::AddCompletionQueue: serves the
  // server's asynchronous methods and carries client calls); call Start
  // once the server is built.
  explicit CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq);
  // Drives a queue of its own, for client calls only (tests, tools).
  CompletionLoop();
  // Shutdown().
  ~CompletionLoop();
  CompletionLoop(const CompletionLoop&) = delete;
  CompletionLoop& operator=(const CompletionLoop&) = delete;

  // Starts `threads` threads (at least 1), each taking tags off the queue:
  // with more than one, tags run concurrently. After each tag a thread
  // polls the queue without sleeping for up to `busy_poll` before it waits
  // (common/busy_poll.h; rpc.busy_poll); zero: it waits at once. Where its
  // tags come later than that at a steady pace, it sleeps until the next
  // is due and polls again around it (common/poll_ahead.h). Call once.
  void Start(int threads = 1, absl::Duration busy_poll = absl::ZeroDuration());
  // As Start(1, busy_poll), the thread also polling `side` (busy_poll.h)
  // while it polls the queue, and once more before each sleep; `side`
  // must outlive the loop's thread. busy_poll must be above zero.
  void StartPolling(absl::Duration busy_poll, SidePoll* side);
  // Shuts the queue down, runs the tags still delivered (each with ok =
  // false once cancelled) and joins the threads. A server serving on the
  // queue must be shut down first (grpc::Server::Shutdown), and no
  // operation may be started afterwards, also not by a tag run during the
  // drain (gRPC aborts the process): for a loop whose calls are all over
  // (tests, tools). A daemon that ends with calls possibly still in flight
  // exits without it. Idempotent; not on a thread of the loop.
  void Shutdown();

  // The queue, to start operations on. Thread-safe.
  grpc::CompletionQueue* cq() const;
  // The same queue as a server's (null for a loop of client calls only).
  grpc::ServerCompletionQueue* server_cq() const { return server_cq_; }

 private:
  void Run(absl::Duration busy_poll, SidePoll* side);

  std::unique_ptr<grpc::CompletionQueue> cq_;
  grpc::ServerCompletionQueue* const server_cq_;
  std::vector<std::thread> threads_;
  bool shut_down_ = false;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_COMPLETION_LOOP_H_
