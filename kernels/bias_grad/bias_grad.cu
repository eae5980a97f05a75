// Column-sum kernel (contract in bias_grad.h).
//
// Variant: BiasGradKernel, one thread per column looping over the rows in
// order; neighbouring threads read neighbouring columns, so each row's read
// is coalesced. Suited to the MLP's shapes (rows = batch, a few hundred at
// most); a tall matrix would want a two-pass tree reduction instead.
// Hardware: any CUDA device the build targets.
#include "kernels/bias_grad/bias_grad.h"
#include "kernels/cuda_status.h"

namespace cairn {
namespace {

constexpr int kThreads = 128;

__global__ void BiasGradKernel(const float* __restrict__ grad, int64_t rows, int64_t cols,
                               float* __restrict__ bias_grad) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  float sum = 0.0f;
  for (int64_t r = 0; r < rows; ++r) sum += grad[r * cols + c];
  bias_grad[c] = sum;
}

}  // namespace

absl::Status BiasGradCuda(const float* grad, int64_t rows, int64_t cols, float* bias_grad,
                          cudaStream_t stream) {
  absl::Status valid = ValidateBiasGrad(grad, rows, cols, bias_grad);
  if (!valid.ok()) return valid;
  const int blocks = static_cast<int>((cols + kThreads - 1) / kThreads);
  BiasGradKernel<<<blocks, kThreads, 0, stream>>>(grad, rows, cols, bias_grad);
  CUDA_RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace cairn
