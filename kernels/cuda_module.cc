// Entry points of the CUDA backend module (libcairn_cuda_backend.so), which
// kernels/cuda_loader.cc opens with dlopen. Plain C signatures, so the loader
// needs no CUDA header; errors come back as text.
#include <cstdio>
#include <cstring>

#include "kernels/cuda_backend.h"

namespace {
void CopyError(const absl::Status& status, char* error, size_t error_size) {
  if (error_size == 0) return;
  std::snprintf(error, error_size, "%s", status.ToString().c_str());
}
}  // namespace

// Stores the number of visible devices in *count; 0 on success, else the
// absl status code with a message in `error`.
extern "C" int CairnCudaDeviceCount(int* count, char* error, size_t error_size) {
  absl::StatusOr<int> n = cairn::CudaDeviceCount();
  if (!n.ok()) {
    CopyError(n.status(), error, error_size);
    return static_cast<int>(n.status().code());
  }
  *count = *n;
  return 0;
}

// A new CUDA backend on `device` (the caller owns it), or null with a message
// in `error`; *code receives the absl status code.
extern "C" cairn::Backend* CairnCreateCudaBackend(int device, int* code, char* error,
                                                  size_t error_size) {
  absl::StatusOr<std::unique_ptr<cairn::CudaBackend>> backend = cairn::CudaBackend::Create(device);
  if (!backend.ok()) {
    CopyError(backend.status(), error, error_size);
    *code = static_cast<int>(backend.status().code());
    return nullptr;
  }
  *code = 0;
  return backend->release();
}
