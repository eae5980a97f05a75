// The CPU backend: OpenBLAS's cblas_sgemm for GEMM and the kernels' CPU
// references for everything else. Device memory is host memory
// (host_accessible() is true), 64-byte aligned.
//
// OpenBLAS threads: OpenBLAS decides (OPENBLAS_NUM_THREADS, else one per
// core); this backend never overrides it.
//
// Not thread-safe; confined to one thread (it keeps a small workspace).
#ifndef CAIRN_KERNELS_CPU_BACKEND_H_
#define CAIRN_KERNELS_CPU_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace cairn {

class CpuBackend final : public Backend {
 public:
  CpuBackend() = default;

  std::string kind() const override { return "cpu"; }
  std::string Describe() const override;
  bool host_accessible() const override { return true; }

  absl::StatusOr<void*> AllocateBytes(size_t bytes) override;
  void FreeBytes(void* ptr) override;
  absl::Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override;
  absl::Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) override;
  absl::Status CopyOnDevice(void* device_dst, const void* device_src, size_t bytes) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc) override;
  absl::Status BiasActivation(float* y, const float* bias, int64_t rows, int64_t cols,
                              bool relu) override;
  absl::Status ReluBackward(const float* activation, float* grad, int64_t n) override;
  absl::Status BiasGrad(const float* grad, int64_t rows, int64_t cols, float* bias_grad) override;
  absl::StatusOr<double> SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                             int64_t rows, int64_t cols, float grad_scale,
                                             float* grad) override;
  absl::StatusOr<int64_t> CountCorrect(const float* logits, const int32_t* labels, int64_t rows,
                                       int64_t cols) override;

 private:
  std::vector<float> row_loss_;  // per-row losses of the last SoftmaxCrossEntropy
};

}  // namespace cairn

#endif  // CAIRN_KERNELS_CPU_BACKEND_H_
