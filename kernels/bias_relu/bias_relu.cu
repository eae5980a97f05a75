// Bias + ReLU kernels (contract in bias_relu.h).
//
// Variants:
//   BiasActivationKernel  one thread per element of y (rows x cols, row-major),
//                         grid-stride, 64-bit index; bias read through the
//                         cache (cols floats, reused by every row).
//   ReluBackwardKernel    one thread per element, grid-stride.
// Hardware: any CUDA device the build targets (no shared memory, no atomics).
#include "kernels/bias_relu/bias_relu.h"
#include "kernels/cuda_status.h"

namespace cairn {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__global__ void BiasActivationKernel(float* __restrict__ y, const float* __restrict__ bias,
                                     int64_t n, int64_t cols, bool relu) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = y[i] + __ldg(bias + i % cols);
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void ReluBackwardKernel(const float* __restrict__ activation, float* __restrict__ grad,
                                   int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (!(activation[i] > 0.0f)) grad[i] = 0.0f;
  }
}

}  // namespace

absl::Status BiasActivationCuda(float* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                                cudaStream_t stream) {
  absl::Status valid = ValidateBiasActivation(y, bias, rows, cols);
  if (!valid.ok()) return valid;
  const int64_t n = rows * cols;
  if (n == 0) return absl::OkStatus();
  BiasActivationKernel<<<BlocksFor(n), kThreads, 0, stream>>>(y, bias, n, cols, relu);
  CUDA_RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status ReluBackwardCuda(const float* activation, float* grad, int64_t n,
                              cudaStream_t stream) {
  absl::Status valid = ValidateReluBackward(activation, grad, n);
  if (!valid.ok()) return valid;
  if (n == 0) return absl::OkStatus();
  ReluBackwardKernel<<<BlocksFor(n), kThreads, 0, stream>>>(activation, grad, n);
  CUDA_RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace cairn
