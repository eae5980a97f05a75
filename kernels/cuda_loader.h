// Loads the CUDA backend module (libcairn_cuda_backend.so) at run time.
//
// cuBLAS carries about 94 KiB of static thread-local storage; linked into a
// binary, it enlarges every thread's TLS block, and libraries that start
// threads with small fixed stacks (the /metrics web server uses 100 KiB)
// then fail to start them. Opening the module only when a CUDA device is
// wanted keeps CPU runs free of it and puts cuBLAS's TLS in dynamic TLS.
//
// Thread-safe (dlopen is; the module handle is kept for the process's life).
#ifndef CAIRN_KERNELS_CUDA_LOADER_H_
#define CAIRN_KERNELS_CUDA_LOADER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace cairn {

// Visible CUDA devices. NotFound when the module cannot be opened (a build
// without CUDA, or the file moved); FailedPrecondition from the driver.
absl::StatusOr<int> LoadedCudaDeviceCount();

// A CUDA backend on `device` from the module.
absl::StatusOr<std::unique_ptr<Backend>> LoadCudaBackend(int device);

}  // namespace cairn

#endif  // CAIRN_KERNELS_CUDA_LOADER_H_
