// Softmax cross-entropy kernel (contract in softmax_xent.h).
//
// Variant: SoftmaxXentKernel, one warp per row, 8 rows per 256-thread block.
// Lanes stride over the row's columns (any cols; coalesced reads), reduce the
// max and the sum of exponentials with warp shuffles, then lane 0 writes the
// row's loss and every lane its columns of the gradient. Float arithmetic
// (expf/logf); the reference uses double, so compare with a tolerance.
// Hardware: any CUDA device the build targets (warp shuffles, sm_30+).
#include <cmath>

#include "kernels/cuda_status.h"
#include "kernels/softmax_xent/softmax_xent.h"

namespace cairn {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarp;

__global__ void SoftmaxXentKernel(const float* __restrict__ logits,
                                  const int32_t* __restrict__ labels, int64_t rows, int64_t cols,
                                  float grad_scale, float* __restrict__ loss,
                                  float* __restrict__ grad) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;  // the whole warp leaves together: row is per warp
  const float* x = logits + row * cols;

  float max = -INFINITY;
  for (int64_t c = lane; c < cols; c += kWarp) max = fmaxf(max, x[c]);
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, offset));
  }
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += kWarp) sum += expf(x[c] - max);
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  }

  const int32_t y = labels[row];
  const bool label_ok = y >= 0 && y < cols;
  if (lane == 0) loss[row] = label_ok ? max + logf(sum) - x[y] : NAN;
  if (grad == nullptr) return;
  float* g = grad + row * cols;
  const float inv_sum = 1.0f / sum;
  for (int64_t c = lane; c < cols; c += kWarp) {
    const float p = expf(x[c] - max) * inv_sum;
    g[c] = (p - (c == y ? 1.0f : 0.0f)) * grad_scale;
  }
}

}  // namespace

absl::Status SoftmaxXentCuda(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                             float grad_scale, float* loss, float* grad, cudaStream_t stream) {
  absl::Status valid = ValidateSoftmaxXent(logits, labels, rows, cols, loss);
  if (!valid.ok()) return valid;
  if (rows == 0) return absl::OkStatus();
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  SoftmaxXentKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      logits, labels, rows, cols, grad_scale, loss, grad);
  CUDA_RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace cairn
