// The worker's side of a call slot in its shared region with one server
// (common/call_slot.h; docs/shared-memory.md, "Calls through the region"):
// a push goes through the slot instead of a gRPC call while the server
// polls, and the caller that waits on its own completion queue
// (ClientImpl's DriveUntil) takes the answer off the slot, as it takes
// gRPC's events off its queue (SlotWaits below).
#ifndef CAIRN_WORKER_CLIENT_CALL_SLOT_CLIENT_H_
#define CAIRN_WORKER_CLIENT_CALL_SLOT_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/call_slot.h"
#include "common/shared_region.h"

namespace grpc {
class CompletionQueue;
class Status;
}  // namespace grpc

namespace cairn {

// Thread-safe: one call at a time goes through a slot (TryAcquire), the
// others through gRPC.
class CallSlotClient : public std::enable_shared_from_this<CallSlotClient> {
 public:
  // The slot at `offset` of `region` (call_slot::kBytes, accepted by the
  // server): `region` stays mapped while this lives. Made with
  // std::make_shared (a posted call holds it).
  CallSlotClient(std::shared_ptr<SharedRegion> region, uint64_t offset);
  ~CallSlotClient();
  CallSlotClient(const CallSlotClient&) = delete;
  CallSlotClient& operator=(const CallSlotClient&) = delete;

  // Reserves the slot for one call: false when a call is in it, when a
  // call that failed in it spoiled it (never used again), or when the
  // server is not polling now (its thread sleeps: gRPC wakes it). After
  // true, either Post or Release.
  bool TryAcquire();
  void Release();
  // Where the request's serialized bytes go (call_slot::kRequestCapacity).
  char* request_area() const;

  // How a call ends: `finish` runs once, on the thread that drives the
  // caller's queue (SlotWaits::Poll), with the answer's status and the
  // response's serialized bytes (valid while it runs); or, when the
  // server did not take the call (it went to sleep, stopped or exited
  // first) or declined it unserved, `fallback` runs there instead and must
  // send the same request through gRPC.
  using Finish = std::function<void(const grpc::Status& status, absl::string_view response)>;
  // Posts the acquired slot's request of `request_bytes` (written into
  // request_area) for method `method` (call_slot::kPush, kPull) with `deadline`,
  // to be completed on `cq` by SlotWaits::Poll.
  void Post(grpc::CompletionQueue* cq, uint32_t method, uint32_t request_bytes,
            absl::Time deadline, Finish finish, std::function<void()> fallback);

  // Calls that went through a slot and were answered there, over the
  // process.
  static uint64_t Answered();

 private:
  friend class SlotWaits;

 public:
  struct Call;  // a posted call (call_slot_client.cc)

 private:
  // Moves `call` on: what ends it (its finish with the result, or its
  // fallback) once it has ended, else null.
  std::function<void()> Check(Call& call);

  const std::shared_ptr<SharedRegion> region_;
  CallSlotHeader* const header_;
  const int server_pid_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> spoiled_{false};
};

// The calls posted through slots, by the completion queue whose driver
// completes them. Thread-safe.
class SlotWaits {
 public:
  // Held by a client whose channels may offer call slots, for the client's
  // life: InUse() is true from before its first call, so none of its
  // queues' drivers sleeps without a bound while a call may end in a slot
  // (a slot accepted, and a call posted in it from another thread, while
  // the driver slept).
  class Expecting {
   public:
    Expecting();
    ~Expecting();
    Expecting(const Expecting&) = delete;
    Expecting& operator=(const Expecting&) = delete;
  };

  // Whether any slot of this process is in use or expected: a queue's
  // driver must then look here as it waits (and not sleep in Next without
  // a bound).
  static bool InUse();
  // Ends what can end of `cq`'s calls, running their finishes or
  // fallbacks on this thread; true when any ended.
  static bool Poll(grpc::CompletionQueue* cq);
  // Whether `cq` has calls in slots not ended yet.
  static bool Pending(grpc::CompletionQueue* cq);
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CALL_SLOT_CLIENT_H_
