#include "worker/trainer/ctr_batch_ahead.h"

#include <algorithm>
#include <utility>

namespace cairn {

CtrBatchAhead::CtrBatchAhead(const CriteoData& data) : data_(data), thread_([this] { Run(); }) {}

CtrBatchAhead::~CtrBatchAhead() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void CtrBatchAhead::Start(absl::Span<const int32_t> examples) {
  absl::MutexLock lock(&mu_);
  examples_.assign(examples.begin(), examples.end());
  started_ = true;
  ready_ = false;
}

bool CtrBatchAhead::Take(absl::Span<const int32_t> examples, CtrBatch* batch) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &CtrBatchAhead::Idle));
  if (!ready_ || !std::equal(examples.begin(), examples.end(), examples_.begin(),
                             examples_.end())) {
    return false;
  }
  std::swap(*batch, batch_);
  ready_ = false;
  return true;
}

void CtrBatchAhead::Run() {
  CtrBatch work;  // this thread's; swapped with batch_ under the lock
  std::vector<int32_t> examples;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &CtrBatchAhead::HasWork));
      if (stop_) return;
      examples = examples_;
      started_ = false;
      gathering_ = true;
    }
    GatherCtrBatch(data_, examples, &work);
    absl::MutexLock lock(&mu_);
    gathering_ = false;
    // A Start() while gathering asked for other examples: this batch goes.
    if (!started_) {
      std::swap(work, batch_);
      ready_ = true;
    }
  }
}

}  // namespace cairn
