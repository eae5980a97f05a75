#include "kernels/cpu_backend.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/bias_grad/bias_grad.h"
#include "kernels/bias_relu/bias_relu.h"
#include "kernels/count_correct/count_correct.h"
#include "kernels/gemm/gemm.h"
#include "kernels/softmax_xent/softmax_xent.h"

namespace cairn {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD load

void Copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

}  // namespace

std::string CpuBackend::Describe() const {
  return absl::StrCat("cpu (", openblas_get_config(), ", ", openblas_get_num_threads(),
                      " threads)");
}

absl::StatusOr<void*> CpuBackend::AllocateBytes(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cpu: cannot allocate ", bytes, " bytes"));
  }
  return ptr;
}

void CpuBackend::FreeBytes(void* ptr) { std::free(ptr); }

absl::Status CpuBackend::CopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  Copy(device_dst, host_src, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::CopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  Copy(host_dst, device_src, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::CopyOnDevice(void* device_dst, const void* device_src, size_t bytes) {
  Copy(device_dst, device_src, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                              float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                              float beta, float* c, int64_t ldc) {
  absl::Status valid = ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (!valid.ok()) return valid;
  if (m == 0 || n == 0) return absl::OkStatus();
  if (k == 0) {  // C = beta * C; not every BLAS accepts k == 0
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return absl::OkStatus();
  }
  cblas_sgemm(CblasRowMajor, trans_a == Transpose::kYes ? CblasTrans : CblasNoTrans,
              trans_b == Transpose::kYes ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  return absl::OkStatus();
}

absl::Status CpuBackend::BiasActivation(float* y, const float* bias, int64_t rows, int64_t cols,
                                        bool relu) {
  return BiasActivationReference(y, bias, rows, cols, relu);
}

absl::Status CpuBackend::ReluBackward(const float* activation, float* grad, int64_t n) {
  return ReluBackwardReference(activation, grad, n);
}

absl::Status CpuBackend::BiasGrad(const float* grad, int64_t rows, int64_t cols, float* bias_grad) {
  return BiasGradReference(grad, rows, cols, bias_grad);
}

absl::StatusOr<double> CpuBackend::SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                                       int64_t rows, int64_t cols, float grad_scale,
                                                       float* grad) {
  if (rows < 0) return absl::InvalidArgumentError("softmax_xent: negative rows");
  if (row_loss_.size() < static_cast<size_t>(rows)) row_loss_.resize(rows);
  absl::Status s =
      SoftmaxXentReference(logits, labels, rows, cols, grad_scale, row_loss_.data(), grad);
  if (!s.ok()) return s;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) sum += row_loss_[r];
  return sum;
}

absl::StatusOr<int64_t> CpuBackend::CountCorrect(const float* logits, const int32_t* labels,
                                                 int64_t rows, int64_t cols) {
  int64_t correct = 0;
  absl::Status s = CountCorrectReference(logits, labels, rows, cols, &correct);
  if (!s.ok()) return s;
  return correct;
}

}  // namespace cairn
