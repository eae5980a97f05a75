#include "kernels/cuda_backend.h"

#include "absl/strings/str_cat.h"
#include "kernels/bias_grad/bias_grad.h"
#include "kernels/bias_relu/bias_relu.h"
#include "kernels/count_correct/count_correct.h"
#include "kernels/cuda_status.h"
#include "kernels/gemm/gemm.h"
#include "kernels/softmax_xent/softmax_xent.h"

namespace cairn {

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice) return 0;
  if (error != cudaSuccess) {
    cudaGetLastError();  // reset the runtime's last-error state for later calls
    return absl::FailedPreconditionError(
        absl::StrCat("cannot query CUDA devices: ", cudaGetErrorName(error), " (",
                     cudaGetErrorString(error), ")"));
  }
  return count;
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(int device) {
  std::unique_ptr<CudaBackend> backend(new CudaBackend());
  backend->device_ = device;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaDeviceProp props;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&props, device));
  backend->description_ = absl::StrCat("cuda (", props.name, ", device ", device, ", sm_",
                                       props.major, props.minor, ")");
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&backend->stream_, cudaStreamNonBlocking));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&backend->cublas_));
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(backend->cublas_, backend->stream_));
  CUDA_RETURN_IF_ERROR(
      cudaMalloc(reinterpret_cast<void**>(&backend->correct_), sizeof(unsigned long long)));
  return backend;
}

CudaBackend::~CudaBackend() {
  // Errors here have nowhere to go; the process is tearing the device down.
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  cudaFree(row_loss_);
  cudaFree(correct_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::StatusOr<void*> CudaBackend::AllocateBytes(size_t bytes) {
  void* ptr = nullptr;
  // cudaMalloc(0) may return null; hand out a real (small) block instead.
  CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes == 0 ? 256 : bytes));
  return ptr;
}

void CudaBackend::FreeBytes(void* ptr) {
  if (ptr == nullptr) return;
  cudaStreamSynchronize(stream_);  // the stream may still use it
  cudaFree(ptr);
}

absl::Status CudaBackend::CopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  return absl::OkStatus();
}

absl::Status CudaBackend::CopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaBackend::CopyOnDevice(void* device_dst, const void* device_src, size_t bytes) {
  if (bytes == 0 || device_dst == device_src) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_));
  return absl::OkStatus();
}

absl::Status CudaBackend::Synchronize() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaBackend::Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n,
                               int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float beta, float* c, int64_t ldc) {
  return GemmCublas(cublas_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

absl::Status CudaBackend::BiasActivation(float* y, const float* bias, int64_t rows, int64_t cols,
                                         bool relu) {
  return BiasActivationCuda(y, bias, rows, cols, relu, stream_);
}

absl::Status CudaBackend::ReluBackward(const float* activation, float* grad, int64_t n) {
  return ReluBackwardCuda(activation, grad, n, stream_);
}

absl::Status CudaBackend::BiasGrad(const float* grad, int64_t rows, int64_t cols,
                                   float* bias_grad) {
  return BiasGradCuda(grad, rows, cols, bias_grad, stream_);
}

absl::Status CudaBackend::ReserveRowLoss(int64_t rows) {
  if (rows <= row_loss_capacity_) return absl::OkStatus();
  if (row_loss_ != nullptr) {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    CUDA_RETURN_IF_ERROR(cudaFree(row_loss_));
    row_loss_ = nullptr;
    row_loss_capacity_ = 0;
  }
  CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&row_loss_), rows * sizeof(float)));
  row_loss_capacity_ = rows;
  row_loss_host_.resize(rows);
  return absl::OkStatus();
}

absl::StatusOr<double> CudaBackend::SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                                        int64_t rows, int64_t cols,
                                                        float grad_scale, float* grad) {
  absl::Status valid = CheckMatrixShape("softmax_xent", rows, cols);
  if (!valid.ok()) return valid;
  if (rows == 0) return 0.0;
  absl::Status s = ReserveRowLoss(rows);
  if (s.ok()) s = SoftmaxXentCuda(logits, labels, rows, cols, grad_scale, row_loss_, grad, stream_);
  if (s.ok()) s = CopyToHost(row_loss_host_.data(), row_loss_, rows * sizeof(float));
  if (!s.ok()) return s;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) sum += row_loss_host_[r];
  return sum;
}

absl::StatusOr<int64_t> CudaBackend::CountCorrect(const float* logits, const int32_t* labels,
                                                  int64_t rows, int64_t cols) {
  absl::Status s = CountCorrectCuda(logits, labels, rows, cols, correct_, stream_);
  unsigned long long correct = 0;
  if (s.ok()) s = CopyToHost(&correct, correct_, sizeof(correct));
  if (!s.ok()) return s;
  return static_cast<int64_t>(correct);
}

}  // namespace cairn
