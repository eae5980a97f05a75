#include "kernels/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

absl::StatusCode CodeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status CudaErrorToStatus(cudaError_t error, const char* expr, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::Status(CodeFor(error), absl::StrCat(file, ":", line, ": ", expr,
                                                   " failed: ", cudaGetErrorName(error), " (",
                                                   cudaGetErrorString(error), ")"));
}

absl::Status CublasStatusToStatus(cublasStatus_t status, const char* expr, const char* file,
                                  int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code =
      status == CUBLAS_STATUS_ALLOC_FAILED      ? absl::StatusCode::kResourceExhausted
      : status == CUBLAS_STATUS_NOT_INITIALIZED ? absl::StatusCode::kFailedPrecondition
                                                : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(file, ":", line, ": ", expr, " failed: ", cublasGetStatusName(status),
                         " (", cublasGetStatusString(status), ")"));
}

}  // namespace cairn
