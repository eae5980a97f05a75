#include "kernels/bias_grad/bias_grad.h"

namespace cairn {

absl::Status BiasGradReference(const float* grad, int64_t rows, int64_t cols, float* bias_grad) {
  absl::Status valid = ValidateBiasGrad(grad, rows, cols, bias_grad);
  if (!valid.ok()) return valid;
  for (int64_t c = 0; c < cols; ++c) bias_grad[c] = 0.0f;
  // Row by row, so the inner loop runs over contiguous memory.
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = grad + r * cols;
    for (int64_t c = 0; c < cols; ++c) bias_grad[c] += row[c];
  }
  return absl::OkStatus();
}

}  // namespace cairn
