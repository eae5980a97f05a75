// Converts CUDA runtime and cuBLAS error codes to absl::Status, recording the
// failing expression and file:line, in the spirit of nccl-tests' CUDACHECK
// (src/common.h) but returning instead of aborting.
//
// Codes: out of memory -> ResourceExhausted; no device / driver too old ->
// FailedPrecondition; everything else -> Internal.
//
// Thread-safe (pure functions). Only in builds with CAIRN_HAVE_CUDA.
#ifndef CAIRN_KERNELS_CUDA_STATUS_H_
#define CAIRN_KERNELS_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace cairn {

// OK for cudaSuccess, else a Status naming `expr`, the CUDA error and file:line.
absl::Status CudaErrorToStatus(cudaError_t error, const char* expr, const char* file, int line);

// OK for CUBLAS_STATUS_SUCCESS, else a Status naming `expr`, the cuBLAS status
// and file:line.
absl::Status CublasStatusToStatus(cublasStatus_t status, const char* expr, const char* file,
                                  int line);

}  // namespace cairn

// Returns from the enclosing function (which returns absl::Status or
// absl::StatusOr) when the CUDA runtime call `expr` fails.
#define CUDA_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                 \
    const cudaError_t cairn_cuda_error_ = (expr);                                      \
    if (cairn_cuda_error_ != cudaSuccess) {                                            \
      return ::cairn::CudaErrorToStatus(cairn_cuda_error_, #expr, __FILE__, __LINE__); \
    }                                                                                  \
  } while (false)

// Same for a cuBLAS call.
#define CUBLAS_RETURN_IF_ERROR(expr)                                                         \
  do {                                                                                       \
    const cublasStatus_t cairn_cublas_status_ = (expr);                                      \
    if (cairn_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                     \
      return ::cairn::CublasStatusToStatus(cairn_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                        \
  } while (false)

// After a kernel launch: reports a launch error (bad configuration, no
// device) without waiting for the kernel.
#define CUDA_RETURN_IF_LAUNCH_ERROR() CUDA_RETURN_IF_ERROR(cudaGetLastError())

#endif  // CAIRN_KERNELS_CUDA_STATUS_H_
