#include "server/shard/rpc/call_slots.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

// grpc::StatusCode's values, without gRPC's headers.
constexpr int kInvalidArgument = 3;
constexpr int kUnimplemented = 12;
constexpr int kUnavailable = 14;

}  // namespace

SlotCall::SlotCall(std::shared_ptr<SharedRegion> region, CallSlotHeader* header,
                   uint32_t worker_id)
    : region_(std::move(region)), header_(header), worker_id_(worker_id) {}

SlotCall::~SlotCall() {
  if (!answered_) {
    Answer(kUnavailable, "the server dropped the call without answering it", "").IgnoreError();
  }
}

absl::string_view SlotCall::request() const {
  const char* base = reinterpret_cast<const char*>(header_) + call_slot::kHeaderBytes;
  return absl::string_view(base, std::min<uint64_t>(header_->request_bytes,
                                                    call_slot::kRequestCapacity));
}

absl::Status SlotCall::Answer(int code, absl::string_view message, absl::string_view response,
                              absl::string_view details) {
  if (response.size() + details.size() > call_slot::kAnswerCapacity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an answer of ", response.size() + details.size(),
        " bytes does not fit in a call slot (", call_slot::kAnswerCapacity, " bytes)"));
  }
  const size_t message_bytes = std::min<size_t>(
      message.size(), call_slot::kAnswerCapacity - response.size() - details.size());
  char* answer = reinterpret_cast<char*>(header_) + call_slot::kAnswerOffset;
  std::memcpy(answer, message.data(), message_bytes);
  std::memcpy(answer + message_bytes, details.data(), details.size());
  std::memcpy(answer + message_bytes + details.size(), response.data(), response.size());
  header_->status_code = code;
  header_->message_bytes = static_cast<uint32_t>(message_bytes);
  header_->details_bytes = static_cast<uint32_t>(details.size());
  header_->response_bytes = static_cast<uint32_t>(response.size());
  answered_ = true;
  header_->state.store(call_slot::kAnswered);
  return absl::OkStatus();
}

void SlotCall::Decline() {
  header_->status_code = call_slot::kDeclined;
  header_->message_bytes = 0;
  header_->details_bytes = 0;
  header_->response_bytes = 0;
  answered_ = true;
  header_->state.store(call_slot::kAnswered);
}

absl::Status CallSlots::Add(const std::shared_ptr<SharedRegion>& region, uint64_t offset,
                            uint64_t bytes, uint32_t worker_id) {
  if (bytes != call_slot::kBytes || offset < SharedRegion::kHeaderBytes || offset % 64 != 0 ||
      offset > region->size() || region->size() - offset < bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "call slot of ", bytes, " bytes at offset ", offset, " does not lie in the ",
        region->size(), "-byte region past its header, 64-byte aligned, ", call_slot::kBytes,
        " bytes long"));
  }
  auto* header = reinterpret_cast<CallSlotHeader*>(region->data() + offset);
  header->server_pid = static_cast<int32_t>(getpid());
  absl::MutexLock lock(&mu_);
  header->serving.store(polling_ ? 1 : 0);
  slots_.push_back(Slot{region, header, worker_id});
  return absl::OkStatus();
}

bool CallSlots::Poll() {
  std::vector<std::unique_ptr<SlotCall>> taken;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < slots_.size();) {
      Slot& slot = slots_[i];
      std::shared_ptr<SharedRegion> region = slot.region.lock();
      if (region == nullptr) {  // dropped: the worker's new region replaced it
        slots_[i] = slots_.back();
        slots_.pop_back();
        continue;
      }
      ++i;
      uint32_t posted = call_slot::kPosted;
      if (slot.header->state.load() != posted ||
          !slot.header->state.compare_exchange_strong(posted, call_slot::kTaken)) {
        continue;
      }
      taken.push_back(std::make_unique<SlotCall>(std::move(region), slot.header, slot.worker_id));
    }
  }
  for (std::unique_ptr<SlotCall>& call : taken) {
    if (call->method() != call_slot::kPush && call->method() != call_slot::kPull) {
      call->Answer(kUnimplemented, absl::StrCat("call slot method ", call->method(),
                                                " is not served (only pushes and pulls are)"),
                   "")
          .IgnoreError();
      continue;
    }
    if (call->request().size() == 0) {
      call->Answer(kInvalidArgument, "a call slot's request is empty", "").IgnoreError();
      continue;
    }
    handler_(std::move(call));
  }
  return !taken.empty();
}

void CallSlots::SetPolling(bool polling) {
  absl::MutexLock lock(&mu_);
  polling_ = polling;
  for (size_t i = 0; i < slots_.size();) {
    // A dropped region may be unmapped already: never touched again.
    if (std::shared_ptr<SharedRegion> region = slots_[i].region.lock(); region == nullptr) {
      slots_[i] = slots_.back();
      slots_.pop_back();
      continue;
    }
    slots_[i++].header->serving.store(polling ? 1 : 0);
  }
}

size_t CallSlots::size() const {
  absl::MutexLock lock(&mu_);
  return slots_.size();
}

}  // namespace cairn
