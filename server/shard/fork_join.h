// A second thread for one large piece of work at a time: a BSP iteration's
// update of a large model, a pull's answer, or the finiteness check of a
// large push, cut in pieces that the calling thread and a helper thread
// take in turn. While a BSP server closes an iteration every worker of the
// job waits for it, so on a host it shares with its workers the core a
// worker computed on is free then; the update of a model of tens of
// megabytes is bound by one core's loads and stores, not by the memory's
// bandwidth, and halves on two (docs/benchmarks.md, "The close on two
// cores").
//
// The helper is kept off the CPU the caller runs on when it is handed work
// (its affinity is every CPU the process may use but that one): a
// scheduler that places a woken thread beside the thread that woke it (as
// the paravirtualised guests of docs/benchmarks.md do) would otherwise have
// the two take turns on one core. A helper that has not started by the
// time the caller ran out of pieces is not waited for: the caller ran them
// all.
//
// Work below kMinSplitBytes is not worth it: on those guests, waking the
// helper costs about what 1 MB of update takes, and the example model's
// 0.94 MB update got slower split.
//
// The helper is also not handed work while as many threads work on the
// server's data path as the process has CPUs (`Working`): two pushes
// applied at once on a two-core host already fill both cores, and a third
// thread would take turns with them (cairn-apply-bench, two pushes of 4 MiB
// at once: 1.30-1.61x one thread with the helper joining in, 2.20-2.24x
// without, where y += x on two threads gave 2.10-2.22x).
//
// Thread-safe: callers at once take turns for the helper; a caller that
// finds it busy runs every piece itself.
#ifndef CAIRN_SERVER_SHARD_FORK_JOIN_H_
#define CAIRN_SERVER_SHARD_FORK_JOIN_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace cairn {

class ForkJoin {
 public:
  // Bytes of values (read or updated) from which work is split.
  static constexpr uint64_t kMinSplitBytes = uint64_t{4} << 20;
  // About the bytes of one piece of split work: small enough that a helper
  // starting late still takes a share, large enough that taking a piece
  // costs nothing beside it.
  static constexpr uint64_t kPieceBytes = uint64_t{1} << 20;

  // Starts the helper thread, which may run on any of `cpus` (the CPUs the
  // process may use; at least two).
  explicit ForkJoin(std::vector<int> cpus);
  // Waits for the work in progress, then stops and joins the helper.
  ~ForkJoin();
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  // A helper for this process, or null when it may use one CPU only (work
  // then runs whole on its caller).
  static std::unique_ptr<ForkJoin> MakeIfUseful();

  // Calls range(begin, end) on consecutive ranges that cover [0, n) once:
  // through `helper` (Run) when it is not null and `bytes` (what the work
  // reads or writes) reach kMinSplitBytes, in pieces of about kPieceBytes;
  // otherwise range(0, n) on this thread. The ranges must touch disjoint
  // data or lock what they share.
  static void ForRanges(ForkJoin* helper, size_t n, uint64_t bytes,
                        absl::FunctionRef<void(size_t begin, size_t end)> range);

  // Calls piece(i) for each i in [0, pieces) once, this thread and the
  // helper each taking the next piece left, and returns once every piece
  // returned.
  void Run(size_t pieces, absl::FunctionRef<void(size_t piece)> piece) ABSL_LOCKS_EXCLUDED(mu_);

  // Runs in which the helper took part (tests).
  uint64_t helped() const ABSL_LOCKS_EXCLUDED(mu_);

  // Marks the calling thread as working on the server's data path (a push
  // checked and applied, a pull answered) for its lifetime. Run hands the
  // helper work only while fewer threads work than the process has CPUs.
  // A scope inside another of the same helper on the same thread (a pull
  // answered within a push) counts the thread once. `helper` may be null
  // (then it does nothing).
  class Working {
   public:
    explicit Working(ForkJoin* helper);
    ~Working();
    Working(const Working&) = delete;
    Working& operator=(const Working&) = delete;

   private:
    ForkJoin* const helper_;
    const ForkJoin* const outer_;  // the thread's scope before this one's helper
  };

 private:
  struct Work {
    absl::FunctionRef<void(size_t)> piece;
    size_t pieces;
    std::atomic<size_t> next{0};  // the next piece to take
  };
  // Takes pieces of `work` until none is left.
  static void TakePieces(Work& work);
  void Help() ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps the helper off `cpu` (no-op when it already is).
  void AvoidCpu(int cpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Conditions for mu_.Await.
  bool Free() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return work_ == nullptr; }
  bool HasWorkOrStop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (work_ != nullptr && !taken_);
  }

  const std::vector<int> cpus_;
  mutable absl::Mutex mu_;
  Work* work_ ABSL_GUARDED_BY(mu_) = nullptr;  // the caller's, while one holds the helper
  bool taken_ ABSL_GUARDED_BY(mu_) = false;    // the helper started work_
  bool done_ ABSL_GUARDED_BY(mu_) = false;     // the helper finished work_
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int avoided_cpu_ ABSL_GUARDED_BY(mu_) = -1;  // the CPU the helper may not use
  uint64_t helped_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<size_t> working_{0};  // threads in a Working scope
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_FORK_JOIN_H_
