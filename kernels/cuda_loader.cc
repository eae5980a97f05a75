#include "kernels/cuda_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

using DeviceCountFn = int (*)(int*, char*, size_t);
using CreateFn = Backend* (*)(int, int*, char*, size_t);

struct Module {
  void* handle = nullptr;
  DeviceCountFn device_count = nullptr;
  CreateFn create = nullptr;
  std::string error;
};

// Where the module may be: next to the binary (<bin>/../lib), the build tree
// it was built in, then the loader's search path.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string dir(exe);
    dir = dir.substr(0, dir.rfind('/'));
    out.push_back(dir + "/../lib/libcairn_cuda_backend.so");
  }
#ifdef CAIRN_CUDA_MODULE
  out.push_back(CAIRN_CUDA_MODULE);
#endif
  out.push_back("libcairn_cuda_backend.so");
  return out;
}

const Module& GetModule() {
  static const Module* module = [] {
    auto* m = new Module;
    for (const std::string& path : Candidates()) {
      m->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (m->handle != nullptr) break;
      absl::StrAppend(&m->error, m->error.empty() ? "" : "; ", dlerror());
    }
    if (m->handle != nullptr) {
      m->device_count =
          reinterpret_cast<DeviceCountFn>(dlsym(m->handle, "CairnCudaDeviceCount"));
      m->create = reinterpret_cast<CreateFn>(dlsym(m->handle, "CairnCreateCudaBackend"));
      if (m->device_count == nullptr || m->create == nullptr) {
        m->error = "libcairn_cuda_backend.so lacks its entry points";
        m->handle = nullptr;
      }
    }
    return m;
  }();
  return *module;
}

}  // namespace

absl::StatusOr<int> LoadedCudaDeviceCount() {
  const Module& m = GetModule();
  if (m.handle == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open the CUDA backend module: ", m.error));
  }
  int count = 0;
  char error[512] = {0};
  const int code = m.device_count(&count, error, sizeof(error));
  if (code != 0) return absl::Status(static_cast<absl::StatusCode>(code), error);
  return count;
}

absl::StatusOr<std::unique_ptr<Backend>> LoadCudaBackend(int device) {
  const Module& m = GetModule();
  if (m.handle == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open the CUDA backend module: ", m.error));
  }
  int code = 0;
  char error[512] = {0};
  Backend* backend = m.create(device, &code, error, sizeof(error));
  if (backend == nullptr) return absl::Status(static_cast<absl::StatusCode>(code), error);
  return std::unique_ptr<Backend>(backend);
}

}  // namespace cairn
