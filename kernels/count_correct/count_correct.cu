// Accuracy-count kernel (contract in count_correct.h).
//
// Variant: CountCorrectKernel, one thread per row scanning its cols (the MLP
// has 10 classes), one atomicAdd per correct row into a 64-bit counter.
// Hardware: any CUDA device the build targets (64-bit atomicAdd).
#include "kernels/count_correct/count_correct.h"
#include "kernels/cuda_status.h"

namespace cairn {
namespace {

constexpr int kThreads = 256;

__global__ void CountCorrectKernel(const float* __restrict__ logits,
                                   const int32_t* __restrict__ labels, int64_t rows, int64_t cols,
                                   unsigned long long* correct) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const float* x = logits + r * cols;
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c) {
    if (x[c] > x[best]) best = c;
  }
  if (best == labels[r]) atomicAdd(correct, 1ull);
}

}  // namespace

absl::Status CountCorrectCuda(const float* logits, const int32_t* labels, int64_t rows,
                              int64_t cols, unsigned long long* correct, cudaStream_t stream) {
  absl::Status valid = ValidateCountCorrect(logits, labels, rows, cols, correct);
  if (!valid.ok()) return valid;
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(correct, 0, sizeof(*correct), stream));
  if (rows == 0) return absl::OkStatus();
  const int64_t blocks = (rows + kThreads - 1) / kThreads;
  CountCorrectKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(logits, labels, rows,
                                                                             cols, correct);
  CUDA_RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace cairn
