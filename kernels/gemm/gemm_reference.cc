#include "kernels/gemm/gemm.h"

namespace cairn {

absl::Status GemmReference(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                           float beta, float* c, int64_t ldc) {
  absl::Status valid = ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (!valid.ok()) return valid;
  const bool ta = trans_a == Transpose::kYes, tb = trans_b == Transpose::kYes;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double a_ip = ta ? a[p * lda + i] : a[i * lda + p];
        const double b_pj = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += a_ip * b_pj;
      }
      float& out = c[i * ldc + j];
      const double old = beta == 0.0f ? 0.0 : static_cast<double>(beta) * out;
      out = static_cast<float>(static_cast<double>(alpha) * sum + old);
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
