#include "kernels/count_correct/count_correct.h"

namespace cairn {

absl::Status CountCorrectReference(const float* logits, const int32_t* labels, int64_t rows,
                                   int64_t cols, int64_t* correct) {
  absl::Status valid = ValidateCountCorrect(logits, labels, rows, cols, correct);
  if (!valid.ok()) return valid;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * cols;
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c) {
      if (x[c] > x[best]) best = c;
    }
    if (best == labels[r]) ++count;
  }
  *correct = count;
  return absl::OkStatus();
}

}  // namespace cairn
