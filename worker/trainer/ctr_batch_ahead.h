// The ctr model's next batch gathered on a thread of its own: while a
// worker waits for its push and read ahead (CtrParameterStore::
// PushClockAndPull on Cairn's servers), this thread prepares the batch of
// the step after (GatherCtrBatch: the examples' features, and each field's
// ids sorted and made distinct), which the worker would otherwise prepare
// before its next push. The same function on the same examples: the batch
// is bit-identical to one gathered on the training thread.
#ifndef CAIRN_WORKER_TRAINER_CTR_BATCH_AHEAD_H_
#define CAIRN_WORKER_TRAINER_CTR_BATCH_AHEAD_H_

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "worker/trainer/criteo_reader.h"
#include "worker/trainer/ctr_model.h"

namespace cairn {

// Thread-safe. `data` must outlive this object and not change while it
// lives.
class CtrBatchAhead {
 public:
  // Starts the gathering thread.
  explicit CtrBatchAhead(const CriteoData& data);
  // Waits for a batch being gathered, then stops the thread.
  ~CtrBatchAhead();
  CtrBatchAhead(const CtrBatchAhead&) = delete;
  CtrBatchAhead& operator=(const CtrBatchAhead&) = delete;

  // Starts gathering the batch of `examples` (indices into data) on the
  // thread; a batch started before and not yet taken is dropped.
  void Start(absl::Span<const int32_t> examples) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until the batch started last is gathered. When it is the batch
  // of `examples`, swaps it into `*batch` and returns true; otherwise (none
  // started, or of other examples) leaves `*batch` alone and returns false.
  bool Take(absl::Span<const int32_t> examples, CtrBatch* batch) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Nothing started and not yet gathered.
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !started_ && !gathering_; }
  // The thread has examples to gather, or is to stop.
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return started_ || stop_; }

  const CriteoData& data_;
  absl::Mutex mu_;
  std::vector<int32_t> examples_ ABSL_GUARDED_BY(mu_);  // of the batch started last
  bool started_ ABSL_GUARDED_BY(mu_) = false;   // examples_ wait for the thread
  bool gathering_ ABSL_GUARDED_BY(mu_) = false;  // the thread works on them
  bool ready_ ABSL_GUARDED_BY(mu_) = false;      // batch_ is examples_'s batch
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CtrBatch batch_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: started once the fields above exist
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_CTR_BATCH_AHEAD_H_
