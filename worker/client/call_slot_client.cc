#include "worker/client/call_slot_client.h"

#include <grpcpp/support/status.h>
#include <signal.h>

#include <cerrno>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace cairn {
namespace {

// A posted call the server has not taken this long after is withdrawn and
// sent through gRPC: its thread is stopped, or descheduled for that long.
constexpr absl::Duration kTakeWait = absl::Milliseconds(50);
// How often a waiting call looks whether the server's process still runs.
constexpr absl::Duration kPidCheckEvery = absl::Milliseconds(10);

std::atomic<int> slots_in_use{0};  // CallSlotClients and SlotWaits::Expecting
std::atomic<uint64_t> answered{0};

// Whether process `pid` of this host has exited.
bool Exited(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

struct CallSlotClient::Call {
  std::shared_ptr<CallSlotClient> slot;
  Finish finish;
  std::function<void()> fallback;
  absl::Time deadline;
  absl::Time posted;
  absl::Time next_pid_check;
};

namespace {

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry;
    return *registry;
  }
  void Add(grpc::CompletionQueue* cq, std::shared_ptr<CallSlotClient::Call> call)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    by_queue_[cq].push_back(std::move(call));
  }
  std::vector<std::shared_ptr<CallSlotClient::Call>> Calls(grpc::CompletionQueue* cq) const
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = by_queue_.find(cq);
    if (it == by_queue_.end()) return {};
    return it->second;
  }
  void Remove(grpc::CompletionQueue* cq, const CallSlotClient::Call* call)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = by_queue_.find(cq);
    if (it == by_queue_.end()) return;
    std::vector<std::shared_ptr<CallSlotClient::Call>>& calls = it->second;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].get() == call) {
        calls.erase(calls.begin() + static_cast<ptrdiff_t>(i));
        break;
      }
    }
    if (calls.empty()) by_queue_.erase(it);
  }
  bool Pending(grpc::CompletionQueue* cq) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return by_queue_.contains(cq);
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<grpc::CompletionQueue*,
                      std::vector<std::shared_ptr<CallSlotClient::Call>>>
      by_queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

CallSlotClient::CallSlotClient(std::shared_ptr<SharedRegion> region, uint64_t offset)
    : region_(std::move(region)),
      header_(reinterpret_cast<CallSlotHeader*>(region_->data() + offset)),
      server_pid_(header_->server_pid) {
  // A server whose process id means nothing here (another pid namespace)
  // could not be told from one that exited: such a slot is not used.
  if (server_pid_ <= 0 || Exited(server_pid_)) spoiled_.store(true);
  slots_in_use.fetch_add(1);
}

CallSlotClient::~CallSlotClient() { slots_in_use.fetch_sub(1); }

bool CallSlotClient::TryAcquire() {
  if (spoiled_.load() || header_->serving.load() == 0) return false;
  bool free = false;
  return busy_.compare_exchange_strong(free, true);
}

void CallSlotClient::Release() { busy_.store(false); }

char* CallSlotClient::request_area() const {
  return reinterpret_cast<char*>(header_) + call_slot::kHeaderBytes;
}

void CallSlotClient::Post(grpc::CompletionQueue* cq, uint32_t method, uint32_t request_bytes,
                          absl::Time deadline, Finish finish, std::function<void()> fallback) {
  header_->method = method;
  header_->request_bytes = request_bytes;
  header_->deadline_unix_ns = absl::ToUnixNanos(deadline);
  const absl::Time now = absl::Now();
  auto call = std::make_shared<Call>(Call{shared_from_this(),
                                          std::move(finish), std::move(fallback), deadline, now,
                                          now + kPidCheckEvery});
  Registry::Get().Add(cq, std::move(call));
  header_->state.store(call_slot::kPosted);
}

uint64_t CallSlotClient::Answered() { return answered.load(std::memory_order_relaxed); }

std::function<void()> CallSlotClient::Check(Call& call) {
  const uint32_t state = header_->state.load();
  if (state == call_slot::kAnswered) {
    const char* answer = reinterpret_cast<const char*>(header_) + call_slot::kAnswerOffset;
    // Lengths clamped to the slot: a server writes them within it.
    const uint32_t message_bytes =
        std::min<uint32_t>(header_->message_bytes, call_slot::kAnswerCapacity);
    const uint32_t details_bytes =
        std::min<uint32_t>(header_->details_bytes, call_slot::kAnswerCapacity - message_bytes);
    const uint32_t response_bytes = std::min<uint32_t>(
        header_->response_bytes, call_slot::kAnswerCapacity - message_bytes - details_bytes);
    const int code = header_->status_code;
    if (code == call_slot::kDeclined) {  // not served there: through gRPC
      header_->state.store(call_slot::kIdle);
      busy_.store(false);
      return std::move(call.fallback);
    }
    grpc::Status status =
        code == 0 ? grpc::Status::OK
                  : grpc::Status(static_cast<grpc::StatusCode>(code),
                                 std::string(answer, message_bytes),
                                 std::string(answer + message_bytes, details_bytes));
    std::string response(answer + message_bytes + details_bytes, response_bytes);
    header_->state.store(call_slot::kIdle);
    busy_.store(false);
    answered.fetch_add(1, std::memory_order_relaxed);
    return [finish = std::move(call.finish), status = std::move(status),
            response = std::move(response)] { finish(status, response); };
  }
  const absl::Time now = absl::Now();
  const bool check_pid = now >= call.next_pid_check;
  if (check_pid) call.next_pid_check = now + kPidCheckEvery;
  if (state == call_slot::kPosted) {
    if (header_->serving.load() != 0 && now - call.posted < kTakeWait &&
        !(check_pid && Exited(server_pid_))) {
      return nullptr;
    }
    uint32_t posted = call_slot::kPosted;
    if (!header_->state.compare_exchange_strong(posted, call_slot::kIdle)) return nullptr;
    busy_.store(false);  // withdrawn: the server never saw it
    return std::move(call.fallback);
  }
  if (state == call_slot::kTaken) {
    std::optional<grpc::Status> failed;
    if (now > call.deadline) {
      failed = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                            "the server took the push from the call slot and did not answer "
                            "by its deadline");
    } else if (check_pid && Exited(server_pid_)) {
      failed = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("the server's process ", server_pid_,
                                         " exited while it served the push from the call slot"));
    }
    if (!failed.has_value()) return nullptr;
    spoiled_.store(true);  // a late answer may still be written: never used again
    return [finish = std::move(call.finish), status = *std::move(failed)] {
      finish(status, absl::string_view());
    };
  }
  // Idle under a posted call: no side writes that; the slot is not trusted again.
  spoiled_.store(true);
  return [finish = std::move(call.finish)] {
    finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the call slot lost the push posted in it"),
           absl::string_view());
  };
}

SlotWaits::Expecting::Expecting() { slots_in_use.fetch_add(1); }
SlotWaits::Expecting::~Expecting() { slots_in_use.fetch_sub(1); }

bool SlotWaits::InUse() { return slots_in_use.load(std::memory_order_relaxed) > 0; }

bool SlotWaits::Poll(grpc::CompletionQueue* cq) {
  Registry& registry = Registry::Get();
  bool ended = false;
  for (const std::shared_ptr<CallSlotClient::Call>& call : registry.Calls(cq)) {
    std::function<void()> end = call->slot->Check(*call);
    if (!end) continue;
    // Removed before it ends: its finish or fallback may post again.
    registry.Remove(cq, call.get());
    end();
    ended = true;
  }
  return ended;
}

bool SlotWaits::Pending(grpc::CompletionQueue* cq) { return Registry::Get().Pending(cq); }

}  // namespace cairn
