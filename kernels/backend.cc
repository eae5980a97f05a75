#include "kernels/backend.h"

#include "absl/strings/str_cat.h"
#include "kernels/cpu_backend.h"

#ifdef CAIRN_CUDA_MODULE
#include "kernels/cuda_loader.h"
#endif

namespace cairn {

bool BuiltWithCuda() {
#ifdef CAIRN_CUDA_MODULE
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& device) {
  if (device == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>());
  if (device != "cuda" && device != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", device, "' (expected auto, cpu or cuda)"));
  }
  const bool required = device == "cuda";
#ifdef CAIRN_CUDA_MODULE
  absl::StatusOr<int> count = LoadedCudaDeviceCount();
  if (count.ok() && *count > 0) return LoadCudaBackend(0);
  if (required) {
    return absl::FailedPreconditionError(
        absl::StrCat("device=cuda: no CUDA device is visible (",
                     count.ok() ? "0 devices" : std::string(count.status().message()),
                     "); use device auto or cpu"));
  }
#else
  if (required) {
    return absl::FailedPreconditionError(
        "device=cuda: this binary was built without CUDA support (CAIRN_WITH_CUDA=OFF or no "
        "nvcc at configure time); use device auto or cpu");
  }
#endif
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>());
}

}  // namespace cairn
