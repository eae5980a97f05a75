// Classification accuracy count: rows whose argmax equals the label.
//
// For row r of logits (rows x cols, row-major): argmax is the first column
// holding the row's maximum (NaN never wins a comparison); the row counts
// when argmax == labels[r]. A label outside [0, cols) never counts.
//
// CountCorrectReference: host memory, writes the count to *correct.
// CountCorrectCuda: device memory; zeroes the device counter *correct and
// adds to it with one thread per row (atomicAdd), on `stream`, asynchronous,
// no allocation; copy *correct back after the stream reaches it.
// Errors: InvalidArgument on bad shapes or null pointers; the Cuda variant
// also returns the launch error.
// Thread-safe (no state).
#ifndef CAIRN_KERNELS_COUNT_CORRECT_COUNT_CORRECT_H_
#define CAIRN_KERNELS_COUNT_CORRECT_COUNT_CORRECT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/shape_check.h"

#ifdef CAIRN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cairn {

inline absl::Status ValidateCountCorrect(const float* logits, const int32_t* labels, int64_t rows,
                                         int64_t cols, const void* correct) {
  if (absl::Status s = CheckMatrixShape("count_correct", rows, cols); !s.ok()) return s;
  if (absl::Status s = CheckPointer("count_correct", "logits", logits, rows * cols); !s.ok())
    return s;
  if (absl::Status s = CheckPointer("count_correct", "labels", labels, rows); !s.ok()) return s;
  return CheckPointer("count_correct", "correct", correct, 1);
}

absl::Status CountCorrectReference(const float* logits, const int32_t* labels, int64_t rows,
                                   int64_t cols, int64_t* correct);

#ifdef CAIRN_HAVE_CUDA
absl::Status CountCorrectCuda(const float* logits, const int32_t* labels, int64_t rows,
                              int64_t cols, unsigned long long* correct, cudaStream_t stream);
#endif

}  // namespace cairn

#endif  // CAIRN_KERNELS_COUNT_CORRECT_COUNT_CORRECT_H_
