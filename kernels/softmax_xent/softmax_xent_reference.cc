#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/softmax_xent/softmax_xent.h"

namespace cairn {

absl::Status SoftmaxXentReference(const float* logits, const int32_t* labels, int64_t rows,
                                  int64_t cols, float grad_scale, float* loss, float* grad) {
  absl::Status valid = ValidateSoftmaxXent(logits, labels, rows, cols, loss);
  if (!valid.ok()) return valid;
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r] < 0 || labels[r] >= cols) {
      return absl::InvalidArgumentError(absl::StrCat("softmax_xent: label ", labels[r], " of row ",
                                                     r, " is outside [0, ", cols, ")"));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * cols;
    double max = x[0];
    for (int64_t c = 1; c < cols; ++c) max = x[c] > max ? x[c] : max;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[c] - max);
    const int32_t y = labels[r];
    loss[r] = static_cast<float>(max + std::log(sum) - x[y]);
    if (grad == nullptr) continue;
    float* g = grad + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double p = std::exp(x[c] - max) / sum;
      g[c] = static_cast<float>((p - (c == y ? 1.0 : 0.0)) * grad_scale);
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
