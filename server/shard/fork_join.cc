#include "server/shard/fork_join.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <utility>

#include "common/cpu_affinity.h"

namespace cairn {

ForkJoin::ForkJoin(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  thread_ = std::thread([this] { Help(); });
  pthread_setname_np(thread_.native_handle(), "cairn-helper");
}

ForkJoin::~ForkJoin() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &ForkJoin::Free));
    stopping_ = true;
  }
  thread_.join();
}

std::unique_ptr<ForkJoin> ForkJoin::MakeIfUseful() {
  std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) return nullptr;
  return std::make_unique<ForkJoin>(std::move(cpus));
}

void ForkJoin::ForRanges(ForkJoin* helper, size_t n, uint64_t bytes,
                         absl::FunctionRef<void(size_t, size_t)> range) {
  if (helper == nullptr || bytes < kMinSplitBytes || n < 2) {
    range(0, n);
    return;
  }
  const size_t pieces = std::min<uint64_t>(n, (bytes + kPieceBytes - 1) / kPieceBytes);
  helper->Run(pieces, [&](size_t i) { range(n * i / pieces, n * (i + 1) / pieces); });
}

void ForkJoin::TakePieces(Work& work) {
  for (size_t i = work.next.fetch_add(1); i < work.pieces; i = work.next.fetch_add(1)) {
    work.piece(i);
  }
}

void ForkJoin::Run(size_t pieces, absl::FunctionRef<void(size_t)> piece) {
  Work work{piece, pieces};
  bool handed = false;
  {
    absl::MutexLock lock(&mu_);
    // A core left for the helper: the caller (when it marked itself
    // Working) and the other working threads take fewer than all.
    if (Free() && !stopping_ && working_.load(std::memory_order_relaxed) < cpus_.size()) {
      AvoidCpu(sched_getcpu());
      work_ = &work;
      taken_ = false;
      done_ = false;
      handed = true;
    }
  }
  TakePieces(work);
  if (!handed) return;
  absl::MutexLock lock(&mu_);
  if (!taken_) {
    work_ = nullptr;  // every piece is done; the helper is not needed
    return;
  }
  ++helped_;
  mu_.Await(absl::Condition(&done_));
  work_ = nullptr;
}

void ForkJoin::AvoidCpu(int cpu) {
  if (cpu < 0 || cpu == avoided_cpu_) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus_) {
    if (c != cpu) CPU_SET(c, &set);
  }
  if (pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set) == 0) avoided_cpu_ = cpu;
}

void ForkJoin::Help() {
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(this, &ForkJoin::HasWorkOrStop));
    if (stopping_) break;
    taken_ = true;
    Work* work = work_;
    mu_.Unlock();
    TakePieces(*work);
    mu_.Lock();
    done_ = true;
  }
  mu_.Unlock();
}

namespace {
// The helper whose Working scope the thread is in, if any.
thread_local const ForkJoin* working_in = nullptr;
}  // namespace

ForkJoin::Working::Working(ForkJoin* helper)
    : helper_(helper == working_in ? nullptr : helper), outer_(working_in) {
  if (helper_ == nullptr) return;  // none, or already counted on this thread
  working_in = helper_;
  helper_->working_.fetch_add(1, std::memory_order_relaxed);
}

ForkJoin::Working::~Working() {
  if (helper_ == nullptr) return;
  helper_->working_.fetch_sub(1, std::memory_order_relaxed);
  working_in = outer_;
}

uint64_t ForkJoin::helped() const {
  absl::MutexLock lock(&mu_);
  return helped_;
}

}  // namespace cairn
