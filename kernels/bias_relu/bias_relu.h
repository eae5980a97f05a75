// Bias + ReLU forward (fused, in place) and the ReLU's backward mask.
//
//   BiasActivation: y[r,c] = y[r,c] + bias[c], then max(0, .) when relu.
//                   y is rows x cols row-major; bias has cols floats.
//   ReluBackward:   grad[i] = activation[i] > 0 ? grad[i] : 0 for i < n, with
//                   activation the forward ReLU output (so the mask is the
//                   derivative of max(0, x) taken as 0 at x = 0).
//
// *Reference: host memory, plain loops. *Cuda: device memory, launched on
// `stream`, asynchronous; they neither allocate nor synchronize.
// Errors: InvalidArgument on bad shapes or null pointers; the Cuda variants
// also return the launch error (cuda_status.h).
// Thread-safe (no state).
#ifndef CAIRN_KERNELS_BIAS_RELU_BIAS_RELU_H_
#define CAIRN_KERNELS_BIAS_RELU_BIAS_RELU_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/shape_check.h"

#ifdef CAIRN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cairn {

inline absl::Status ValidateBiasActivation(const float* y, const float* bias, int64_t rows,
                                           int64_t cols) {
  if (absl::Status s = CheckMatrixShape("bias_activation", rows, cols); !s.ok()) return s;
  if (absl::Status s = CheckPointer("bias_activation", "y", y, rows * cols); !s.ok()) return s;
  return CheckPointer("bias_activation", "bias", bias, rows > 0 ? cols : 0);
}

inline absl::Status ValidateReluBackward(const float* activation, const float* grad, int64_t n) {
  if (n < 0) return absl::InvalidArgumentError("relu_backward: negative element count");
  if (absl::Status s = CheckPointer("relu_backward", "activation", activation, n); !s.ok())
    return s;
  return CheckPointer("relu_backward", "grad", grad, n);
}

absl::Status BiasActivationReference(float* y, const float* bias, int64_t rows, int64_t cols,
                                     bool relu);
absl::Status ReluBackwardReference(const float* activation, float* grad, int64_t n);

#ifdef CAIRN_HAVE_CUDA
absl::Status BiasActivationCuda(float* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                                cudaStream_t stream);
absl::Status ReluBackwardCuda(const float* activation, float* grad, int64_t n, cudaStream_t stream);
#endif

}  // namespace cairn

#endif  // CAIRN_KERNELS_BIAS_RELU_BIAS_RELU_H_
