#include "common/completion_loop.h"

#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <utility>

namespace cairn {
namespace {

class OnceTag final : public CompletionLoop::Tag {
 public:
  explicit OnceTag(std::function<void(bool)> proceed) : proceed_(std::move(proceed)) {}
  void Proceed(bool ok) override {
    std::function<void(bool)> proceed = std::move(proceed_);
    delete this;
    proceed(ok);
  }

 private:
  std::function<void(bool)> proceed_;
};

}  // namespace

CompletionLoop::Tag* CompletionLoop::Once(std::function<void(bool ok)> proceed) {
  return new OnceTag(std::move(proceed));
}

CompletionLoop::CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : server_cq_(cq.get()) {
  cq_ = std::move(cq);
}

CompletionLoop::CompletionLoop()
    : cq_(std::make_unique<grpc::CompletionQueue>()), server_cq_(nullptr) {}

CompletionLoop::~CompletionLoop() { Shutdown(); }

grpc::CompletionQueue* CompletionLoop::cq() const { return cq_.get(); }

void CompletionLoop::Start(int threads) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Run(); });
}

void CompletionLoop::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
}

void CompletionLoop::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  cq_->Shutdown();
  if (!threads_.empty()) {
    for (std::thread& t : threads_) t.join();
    return;
  }
  // Never started: drain here (a queue is destroyed only once drained).
  Run();
}

}  // namespace cairn
