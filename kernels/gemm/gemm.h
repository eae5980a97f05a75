// Single-precision GEMM, row-major: C = alpha * op(A) * op(B) + beta * C.
//
// Shapes: op(A) is m x k, op(B) is k x n, C is m x n; lda/ldb/ldc are the row
// strides of A, B, C as stored (the cblas_sgemm CblasRowMajor contract).
// beta == 0 means C is write-only (its old contents, NaN included, are
// ignored).
//
// Variants:
//   GemmReference  plain loops with double accumulation, host memory; the
//                  oracle the tests hold OpenBLAS and cuBLAS to.
//   GemmCublas     cuBLAS (column-major) on device memory: a row-major C is a
//                  column-major C^T, so it computes C^T = op(B)^T * op(A)^T by
//                  passing B before A with m and n swapped.
// The CPU backend calls OpenBLAS's cblas_sgemm directly (kernels/cpu_backend.cc).
//
// Thread-safe (no state of their own); GemmCublas follows its handle's rules.
#ifndef CAIRN_KERNELS_GEMM_GEMM_H_
#define CAIRN_KERNELS_GEMM_GEMM_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/shape_check.h"

#ifdef CAIRN_HAVE_CUDA
#include <cublas_v2.h>
#endif

namespace cairn {

// InvalidArgument when a size is negative or above 2^31-1, a leading
// dimension is smaller than the row it strides over, or a pointer is null
// while its matrix is not empty.
inline absl::Status ValidateGemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n,
                                 int64_t k, const float* a, int64_t lda, const float* b,
                                 int64_t ldb, const float* c, int64_t ldc) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (m < 0 || n < 0 || k < 0 || m > kMax || n > kMax || k > kMax) {
    return absl::InvalidArgumentError(absl::StrCat("gemm: bad sizes m=", m, " n=", n, " k=", k));
  }
  const int64_t a_cols = trans_a == Transpose::kYes ? m : k;
  const int64_t b_cols = trans_b == Transpose::kYes ? k : n;
  if (lda < std::max<int64_t>(1, a_cols) || ldb < std::max<int64_t>(1, b_cols) ||
      ldc < std::max<int64_t>(1, n) || lda > kMax || ldb > kMax || ldc > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: leading dimensions too small: lda=", lda, " (need >= ", a_cols,
                     "), ldb=", ldb, " (need >= ", b_cols, "), ldc=", ldc, " (need >= ", n, ")"));
  }
  const bool a_used = m > 0 && k > 0, b_used = n > 0 && k > 0, c_used = m > 0 && n > 0;
  if ((a == nullptr && a_used) || (b == nullptr && b_used) || (c == nullptr && c_used)) {
    return absl::InvalidArgumentError("gemm: null matrix pointer for a non-empty matrix");
  }
  return absl::OkStatus();
}

// Host memory. Errors: as ValidateGemm.
absl::Status GemmReference(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                           float beta, float* c, int64_t ldc);

#ifdef CAIRN_HAVE_CUDA
// Device memory; runs on the handle's stream (asynchronous). Errors: as
// ValidateGemm, or Internal naming the cuBLAS status with file:line.
absl::Status GemmCublas(cublasHandle_t handle, Transpose trans_a, Transpose trans_b, int64_t m,
                        int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
#endif

}  // namespace cairn

#endif  // CAIRN_KERNELS_GEMM_GEMM_H_
