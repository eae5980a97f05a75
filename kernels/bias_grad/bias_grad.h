// Bias gradient: the column sums of a row-major gradient.
//
//   bias_grad[c] = sum over r < rows of grad[r, c]; grad is rows x cols,
//   bias_grad has cols floats and is overwritten (rows == 0 gives zeros).
// Both variants add rows in order 0, 1, ..., rows-1 in float32, so they agree
// to rounding of the same sequence of additions.
//
// BiasGradReference: host memory. BiasGradCuda: device memory, on `stream`,
// asynchronous, no allocation. Errors: InvalidArgument on bad shapes or null
// pointers; the Cuda variant also returns the launch error.
// Thread-safe (no state).
#ifndef CAIRN_KERNELS_BIAS_GRAD_BIAS_GRAD_H_
#define CAIRN_KERNELS_BIAS_GRAD_BIAS_GRAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/shape_check.h"

#ifdef CAIRN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cairn {

inline absl::Status ValidateBiasGrad(const float* grad, int64_t rows, int64_t cols,
                                     const float* bias_grad) {
  if (absl::Status s = CheckMatrixShape("bias_grad", rows, cols); !s.ok()) return s;
  if (absl::Status s = CheckPointer("bias_grad", "grad", grad, rows * cols); !s.ok()) return s;
  return CheckPointer("bias_grad", "bias_grad", bias_grad, cols);
}

absl::Status BiasGradReference(const float* grad, int64_t rows, int64_t cols, float* bias_grad);

#ifdef CAIRN_HAVE_CUDA
absl::Status BiasGradCuda(const float* grad, int64_t rows, int64_t cols, float* bias_grad,
                          cudaStream_t stream);
#endif

}  // namespace cairn

#endif  // CAIRN_KERNELS_BIAS_GRAD_BIAS_GRAD_H_
