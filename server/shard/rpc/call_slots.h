// The server's side of the call slots workers on this host offer in their
// shared regions (common/call_slot.h, docs/shared-memory.md "Calls through
// the region"): the serving thread polls them while it polls its gRPC
// queue (CompletionLoop::StartPolling) and hands each posted call to the
// service, which answers it as it answers the gRPC method.
#ifndef CAIRN_SERVER_SHARD_RPC_CALL_SLOTS_H_
#define CAIRN_SERVER_SHARD_RPC_CALL_SLOTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/busy_poll.h"
#include "common/call_slot.h"
#include "common/shared_region.h"

namespace cairn {

// One call taken from a slot. Its request stays readable until it is
// answered; the region stays mapped as long as the call lives.
class SlotCall {
 public:
  SlotCall(std::shared_ptr<SharedRegion> region, CallSlotHeader* header, uint32_t worker_id);
  ~SlotCall();  // answers UNAVAILABLE if never answered (the worker then retries)
  SlotCall(const SlotCall&) = delete;
  SlotCall& operator=(const SlotCall&) = delete;

  // The worker whose region holds the slot: the only one whose calls it
  // may carry.
  uint32_t worker_id() const { return worker_id_; }
  uint32_t method() const { return header_->method; }
  // The request's bytes (at most call_slot::kRequestCapacity).
  absl::string_view request() const;
  // The deadline the worker set for the call.
  absl::Time deadline() const { return absl::FromUnixNanos(header_->deadline_unix_ns); }

  // Writes the answer (a grpc::StatusCode `code`, `message` cut to what
  // fits, the status's binary `details`, the response's serialized bytes)
  // and hands the slot back to the worker. Once; from any thread.
  // INVALID_ARGUMENT without writing when `details` and `response` are
  // above call_slot::kAnswerCapacity together (the caller answers again
  // with less).
  absl::Status Answer(int code, absl::string_view message, absl::string_view response,
                      absl::string_view details = {});
  // Answers that the call was not served here: the worker sends it through
  // gRPC (call_slot::kDeclined). Only before any of it was served.
  void Decline();

 private:
  const std::shared_ptr<SharedRegion> region_;
  CallSlotHeader* const header_;
  const uint32_t worker_id_;
  bool answered_ = false;
};

// Thread-safe; Poll and SetPolling come from the one serving thread.
class CallSlots final : public SidePoll {
 public:
  // Runs on the polling thread for each call taken.
  using Handler = std::function<void(std::unique_ptr<SlotCall>)>;
  explicit CallSlots(Handler handler) : handler_(std::move(handler)) {}

  // Polls the slot at `offset` of `region` (of `bytes`, which must be
  // call_slot::kBytes) for worker `worker_id`'s calls from now on, until
  // the region is dropped elsewhere (only a weak reference is kept), and
  // writes this process's id into it. INVALID_ARGUMENT naming the offset
  // and size when the slot does not lie in the region, 64-byte aligned,
  // past its header.
  absl::Status Add(const std::shared_ptr<SharedRegion>& region, uint64_t offset, uint64_t bytes,
                   uint32_t worker_id) ABSL_LOCKS_EXCLUDED(mu_);

  bool Poll() override ABSL_LOCKS_EXCLUDED(mu_);
  void SetPolling(bool polling) override ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Slot {
    std::weak_ptr<SharedRegion> region;
    CallSlotHeader* header = nullptr;
    uint32_t worker_id = 0;
  };

  const Handler handler_;
  mutable absl::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  bool polling_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_CALL_SLOTS_H_
