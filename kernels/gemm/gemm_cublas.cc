#include "kernels/cuda_status.h"
#include "kernels/gemm/gemm.h"

namespace cairn {

absl::Status GemmCublas(cublasHandle_t handle, Transpose trans_a, Transpose trans_b, int64_t m,
                        int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  absl::Status valid = ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (!valid.ok()) return valid;
  if (m == 0 || n == 0) return absl::OkStatus();
  // Row-major C (m x n) is column-major C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m),
  // and a row-major X read column-major is X^T: so pass B first, then A, with
  // the same transpose flags and the same leading dimensions.
  const cublasOperation_t op_a = trans_a == Transpose::kYes ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b == Transpose::kYes ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_RETURN_IF_ERROR(cublasSgemm(handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                     static_cast<int>(k), &alpha, b, static_cast<int>(ldb), a,
                                     static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
  return absl::OkStatus();
}

}  // namespace cairn
