#include "worker/trainer/sharding.h"

#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace cairn {
namespace {

// Uniform in [0, bound), bound >= 1, without modulo bias: reject the draws
// below 2^64 mod bound (as OpenBSD's arc4random_uniform does).
uint64_t Bounded(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

int64_t StepsPerEpoch(int64_t num_examples, int num_workers, int batch_size) {
  if (num_examples < 1 || num_workers < 1 || batch_size < 1) return 0;
  return num_examples / (int64_t{num_workers} * batch_size);
}

void EpochPermutation(int64_t num_examples, uint64_t seed, int64_t epoch,
                      std::vector<int32_t>* out) {
  out->resize(static_cast<size_t>(num_examples));
  std::iota(out->begin(), out->end(), 0);
  std::mt19937_64 rng(SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(epoch))));
  for (int64_t i = num_examples - 1; i > 0; --i) {
    const uint64_t j = Bounded(rng, static_cast<uint64_t>(i) + 1);
    std::swap((*out)[i], (*out)[j]);
  }
}

absl::StatusOr<DataShard> DataShard::Create(int64_t num_examples, int worker, int num_workers,
                                            int batch_size, uint64_t seed) {
  if (num_workers < 1 || worker < 0 || worker >= num_workers || batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("data shard: need 0 <= worker < workers and ",
                                                   "batch >= 1, got worker ", worker, " of ",
                                                   num_workers, ", batch ", batch_size));
  }
  if (num_examples > INT32_MAX || StepsPerEpoch(num_examples, num_workers, batch_size) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data shard: ", num_examples, " examples are too few for ", num_workers,
                     " workers with batch ", batch_size, " (need at least workers * batch)"));
  }
  return DataShard(num_examples, worker, num_workers, batch_size, seed);
}

DataShard::DataShard(int64_t num_examples, int worker, int num_workers, int batch_size,
                     uint64_t seed)
    : num_examples_(num_examples),
      worker_(worker),
      num_workers_(num_workers),
      batch_size_(batch_size),
      seed_(seed),
      steps_per_epoch_(StepsPerEpoch(num_examples, num_workers, batch_size)),
      batch_(static_cast<size_t>(batch_size)) {}

void DataShard::StartEpoch(int64_t epoch) {
  EpochPermutation(num_examples_, seed_, epoch, &permutation_);
}

absl::Span<const int32_t> DataShard::Batch(int64_t step) {
  for (int j = 0; j < batch_size_; ++j) {
    const int64_t position = (step * batch_size_ + j) * num_workers_ + worker_;
    batch_[j] = permutation_[static_cast<size_t>(position)];
  }
  return batch_;
}

}  // namespace cairn
