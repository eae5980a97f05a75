// The compute backend of cairn-worker: device memory and the operations a
// dense MLP needs (GEMM, bias + ReLU, softmax cross-entropy, ...), on the CPU
// (OpenBLAS + plain loops) or on a CUDA GPU (cuBLAS + the kernels/ kernels).
//
// Memory: every pointer an operation takes is *device memory* of this backend
// (from AllocateBytes). On the CPU backend device memory is host memory, and
// host_accessible() says so: callers may then pass host pointers directly and
// skip the copies. Matrices are row-major, dense, float32 unless said.
//
// Ordering: operations run in call order on one stream; they may return
// before the work is done. The Copy*ToHost functions and the functions that
// return a host value (SoftmaxCrossEntropy, CountCorrect) wait for the work
// before them, so their results are ready on return.
//
// Not thread-safe; confined to one thread (one stream, one cuBLAS handle).
#ifndef CAIRN_KERNELS_BACKEND_H_
#define CAIRN_KERNELS_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn {

enum class Transpose { kNo, kYes };

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda".
  virtual std::string kind() const = 0;
  // For logs: "cpu (OpenBLAS, 2 threads)", "cuda (NVIDIA H200, device 0)".
  virtual std::string Describe() const = 0;
  // True when device memory is host memory (CPU backend).
  virtual bool host_accessible() const = 0;

  // ---- Memory ----------------------------------------------------------
  // Allocates `bytes` of device memory (aligned for float and int32).
  // ResourceExhausted when the device is out of memory. bytes == 0 gives a
  // valid pointer that must still be freed.
  virtual absl::StatusOr<void*> AllocateBytes(size_t bytes) = 0;
  // Frees memory from AllocateBytes; nullptr is ignored. Waits for pending work.
  virtual void FreeBytes(void* ptr) = 0;
  // Copies `bytes` host -> device / device -> host / device -> device.
  virtual absl::Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual absl::Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual absl::Status CopyOnDevice(void* device_dst, const void* device_src, size_t bytes) = 0;
  // Waits until all work issued so far is done; reports asynchronous errors.
  virtual absl::Status Synchronize() = 0;

  // ---- Operations (all pointers are device memory) ----------------------
  // C = alpha * op(A) * op(B) + beta * C, row-major, as cblas_sgemm with
  // CblasRowMajor: op(A) is m x k, op(B) is k x n, C is m x n; lda/ldb/ldc are
  // the row strides of A, B, C as stored (lda >= k when A is not transposed,
  // >= m when it is). beta == 0 ignores C's old contents (NaN included).
  // InvalidArgument on negative sizes or too-small leading dimensions.
  virtual absl::Status Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                            float beta, float* c, int64_t ldc) = 0;

  // In place on y (rows x cols): y[r,c] += bias[c], then max(0, .) when relu.
  virtual absl::Status BiasActivation(float* y, const float* bias, int64_t rows, int64_t cols,
                                      bool relu) = 0;

  // grad[i] = activation[i] > 0 ? grad[i] : 0 for i < n, where activation is
  // the ReLU output of the forward pass (the ReLU's derivative mask).
  virtual absl::Status ReluBackward(const float* activation, float* grad, int64_t n) = 0;

  // bias_grad[c] = sum over r of grad[r,c]; grad is rows x cols.
  virtual absl::Status BiasGrad(const float* grad, int64_t rows, int64_t cols,
                                float* bias_grad) = 0;

  // Softmax cross-entropy of logits (rows x cols) against labels (rows int32
  // in [0, cols)). Returns the SUM over rows of -log softmax(row)[label] (the
  // caller divides by its batch). When grad is not null, writes
  // grad[r,c] = (softmax(row r)[c] - [c == label_r]) * grad_scale; pass
  // grad_scale = 1/batch for the gradient of the mean loss. grad must not
  // alias logits. InvalidArgument on bad sizes or (CPU) a label out of range;
  // the CUDA backend reports an out-of-range label as a NaN loss.
  virtual absl::StatusOr<double> SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                                     int64_t rows, int64_t cols, float grad_scale,
                                                     float* grad) = 0;

  // Number of rows whose argmax (the first maximum) equals the label.
  virtual absl::StatusOr<int64_t> CountCorrect(const float* logits, const int32_t* labels,
                                               int64_t rows, int64_t cols) = 0;
};

// Builds the backend `device` names:
//   "cpu":  OpenBLAS (its thread count follows OPENBLAS_NUM_THREADS).
//   "cuda": CUDA device 0. FailedPrecondition when the build has no CUDA
//           support or no CUDA device is visible, saying which.
//   "auto": CUDA when built with it and a device is visible, else CPU.
// InvalidArgument for any other name.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& device);

// True when this binary was built with the CUDA backend.
bool BuiltWithCuda();

}  // namespace cairn

#endif  // CAIRN_KERNELS_BACKEND_H_
