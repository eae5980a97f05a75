#include "kernels/bias_relu/bias_relu.h"

namespace cairn {

absl::Status BiasActivationReference(float* y, const float* bias, int64_t rows, int64_t cols,
                                     bool relu) {
  absl::Status valid = ValidateBiasActivation(y, bias, rows, cols);
  if (!valid.ok()) return valid;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    if (relu) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = row[c] + bias[c];
        row[c] = v > 0.0f ? v : 0.0f;
      }
    } else {
      for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
    }
  }
  return absl::OkStatus();
}

absl::Status ReluBackwardReference(const float* activation, float* grad, int64_t n) {
  absl::Status valid = ValidateReluBackward(activation, grad, n);
  if (!valid.ok()) return valid;
  for (int64_t i = 0; i < n; ++i) {
    grad[i] = activation[i] > 0.0f ? grad[i] : 0.0f;
  }
  return absl::OkStatus();
}

}  // namespace cairn
