// The CUDA backend: cuBLAS for GEMM and the kernels/ kernels for the rest,
// all on one CUDA stream of one device. Only in builds with CAIRN_HAVE_CUDA.
//
// Device memory comes from cudaMalloc; host_accessible() is false, so callers
// copy inputs in and results out. Operations are asynchronous on the stream;
// CopyToHost, SoftmaxCrossEntropy and CountCorrect synchronize it.
//
// Not thread-safe; confined to one thread (one stream, one cuBLAS handle).
#ifndef CAIRN_KERNELS_CUDA_BACKEND_H_
#define CAIRN_KERNELS_CUDA_BACKEND_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace cairn {

// Number of visible CUDA devices. FailedPrecondition (with the CUDA error)
// when the driver cannot be queried, e.g. no driver is installed.
absl::StatusOr<int> CudaDeviceCount();

class CudaBackend final : public Backend {
 public:
  // Opens `device`: sets it current, creates a stream and a cuBLAS handle.
  // FailedPrecondition when the device does not exist; Internal on other
  // CUDA/cuBLAS failures (with file:line).
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(int device);
  ~CudaBackend() override;

  std::string kind() const override { return "cuda"; }
  std::string Describe() const override { return description_; }
  bool host_accessible() const override { return false; }

  absl::StatusOr<void*> AllocateBytes(size_t bytes) override;
  void FreeBytes(void* ptr) override;
  absl::Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override;
  absl::Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) override;
  absl::Status CopyOnDevice(void* device_dst, const void* device_src, size_t bytes) override;
  absl::Status Synchronize() override;

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
  CudaBackend() = default;
  // Grows the device per-row loss buffer to at least `rows` floats.
  absl::Status ReserveRowLoss(int64_t rows);

  // Constant after Create.
  int device_ = 0;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  unsigned long long* correct_ = nullptr;  // device counter for CountCorrect

  // Workspace of SoftmaxCrossEntropy.
  float* row_loss_ = nullptr;  // device, row_loss_capacity_ floats
  int64_t row_loss_capacity_ = 0;
  std::vector<float> row_loss_host_;
};

}  // namespace cairn

#endif  // CAIRN_KERNELS_CUDA_BACKEND_H_
