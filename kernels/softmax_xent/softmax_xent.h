// Softmax cross-entropy, forward and gradient fused, one row per example.
//
// For row r of logits (rows x cols, row-major) with label y = labels[r]:
//   p           = softmax(logits[r, :])  (max-subtracted: stable for any logits)
//   loss[r]     = log(sum_c exp(logits[r,c])) - logits[r,y] = -log p[y]
//   grad[r, c]  = (p[c] - [c == y]) * grad_scale      (only when grad != null)
// With grad_scale = 1/batch, grad is d(mean loss)/d(logits). grad must not
// alias logits. loss has rows floats; the caller sums it (in double).
//
// Labels: int32 in [0, cols). The reference rejects an out-of-range label
// with InvalidArgument naming the row before writing anything; the Cuda
// variant cannot report without a sync, so it writes NaN as that row's loss
// and leaves out the one-hot term from its gradient.
//
// SoftmaxXentReference: host memory, double arithmetic. SoftmaxXentCuda:
// device memory, one warp per row (any cols), float arithmetic, on `stream`,
// asynchronous, no allocation. Other errors: InvalidArgument on bad shapes
// or null pointers; the Cuda variant also returns the launch error.
// Thread-safe (no state).
#ifndef CAIRN_KERNELS_SOFTMAX_XENT_SOFTMAX_XENT_H_
#define CAIRN_KERNELS_SOFTMAX_XENT_SOFTMAX_XENT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/shape_check.h"

#ifdef CAIRN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cairn {

inline absl::Status ValidateSoftmaxXent(const float* logits, const int32_t* labels, int64_t rows,
                                        int64_t cols, const float* loss) {
  if (absl::Status s = CheckMatrixShape("softmax_xent", rows, cols); !s.ok()) return s;
  if (absl::Status s = CheckPointer("softmax_xent", "logits", logits, rows * cols); !s.ok())
    return s;
  if (absl::Status s = CheckPointer("softmax_xent", "labels", labels, rows); !s.ok()) return s;
  return CheckPointer("softmax_xent", "loss", loss, rows);
}

absl::Status SoftmaxXentReference(const float* logits, const int32_t* labels, int64_t rows,
                                  int64_t cols, float grad_scale, float* loss, float* grad);

#ifdef CAIRN_HAVE_CUDA
absl::Status SoftmaxXentCuda(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                             float grad_scale, float* loss, float* grad, cudaStream_t stream);
#endif

}  // namespace cairn

#endif  // CAIRN_KERNELS_SOFTMAX_XENT_SOFTMAX_XENT_H_
