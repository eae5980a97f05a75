// Synthetic Criteo-format data for the ctr model's tests.
#ifndef CAIRN_TESTS_WORKER_TRAINER_SYNTHETIC_CRITEO_H_
#define CAIRN_TESTS_WORKER_TRAINER_SYNTHETIC_CRITEO_H_

#include <cstdint>
#include <random>

#include "worker/trainer/criteo_reader.h"
#include "worker/trainer/ctr_model.h"

namespace cairn {

// n examples with random labels and integers (every fifth integer field
// missing in odd examples); field f's id of example i is
// (i * (f + 1)) % distinct, so ids repeat within and across batches; field
// 3 is missing in every third example.
inline CriteoData SyntheticCriteo(int n, int distinct, unsigned seed) {
  std::mt19937 rng(seed);
  CriteoData d;
  d.size = n;
  for (int i = 0; i < n; ++i) {
    d.labels.push_back(static_cast<float>(rng() % 2));
    for (int j = 0; j < kCriteoIntegerFeatures; ++j) {
      d.integers.push_back(static_cast<int64_t>(rng() % 50) - 2);
      d.integer_present.push_back(j % 5 != 0 || i % 2 == 0 ? 1 : 0);
    }
    for (int f = 0; f < kCtrFieldCount; ++f) {
      d.ids.push_back(f == 3 && i % 3 == 0 ? kCriteoMissingId
                                           : static_cast<uint64_t>((i * (f + 1)) % distinct));
    }
  }
  return d;
}

}  // namespace cairn

#endif  // CAIRN_TESTS_WORKER_TRAINER_SYNTHETIC_CRITEO_H_
