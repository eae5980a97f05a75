// Which training examples a worker uses at each step: shuffle per epoch,
// then deal the permutation round-robin to the workers.
//
// Epoch e uses a permutation of [0, n) drawn from (seed, e) (Fisher-Yates
// with std::mt19937_64 and an unbiased bounded draw, so every worker and
// every platform gets the same one). Worker r of W takes positions
// r, r + W, r + 2W, ... of it; its step s takes the next `batch` of those,
// i.e. positions (s * batch + j) * W + r for j < batch.
//
// Every worker runs the same number of steps per epoch,
// floor(n / (W * batch)), so BSP workers stay in step; the last
// n mod (W * batch) positions of each permutation go unused that epoch
// (a different set each epoch). Step s of all W workers together covers
// positions [s * W * batch, (s + 1) * W * batch): exactly the examples one
// worker with batch W * batch would use at step s. With W = 1 this is the
// order of `cairn-worker --local`.
//
// Not thread-safe; confined to one thread.
#ifndef CAIRN_WORKER_TRAINER_SHARDING_H_
#define CAIRN_WORKER_TRAINER_SHARDING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace cairn {

// floor(num_examples / (num_workers * batch_size)); 0 when any is < 1.
int64_t StepsPerEpoch(int64_t num_examples, int num_workers, int batch_size);

// The permutation of [0, num_examples) epoch `epoch` uses; `out` is resized.
void EpochPermutation(int64_t num_examples, uint64_t seed, int64_t epoch,
                      std::vector<int32_t>* out);

class DataShard {
 public:
  // InvalidArgument unless 0 <= worker < num_workers, batch_size >= 1, and
  // the data gives every worker at least one step per epoch.
  static absl::StatusOr<DataShard> Create(int64_t num_examples, int worker, int num_workers,
                                          int batch_size, uint64_t seed);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int batch_size() const { return batch_size_; }

  // Draws epoch `epoch`'s permutation (reusing memory).
  void StartEpoch(int64_t epoch);

  // The example indices of step `step` (0 <= step < steps_per_epoch()) of the
  // current epoch: batch_size() indices, valid until the next call.
  absl::Span<const int32_t> Batch(int64_t step);

 private:
  DataShard(int64_t num_examples, int worker, int num_workers, int batch_size, uint64_t seed);

  int64_t num_examples_;
  int worker_;
  int num_workers_;
  int batch_size_;
  uint64_t seed_;
  int64_t steps_per_epoch_;
  std::vector<int32_t> permutation_;
  std::vector<int32_t> batch_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_SHARDING_H_
