// DeviceBuffer<T>: an owned array of T in a Backend's device memory.
//
// Not thread-safe; follows its Backend's confinement. The Backend must
// outlive every buffer allocated from it.
#ifndef CAIRN_KERNELS_DEVICE_BUFFER_H_
#define CAIRN_KERNELS_DEVICE_BUFFER_H_

#include <cstddef>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "kernels/backend.h"

namespace cairn {

template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold plain values");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      backend_ = std::exchange(other.backend_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  // Allocates `size` elements (contents unspecified). ResourceExhausted when
  // the device is out of memory.
  static absl::StatusOr<DeviceBuffer> Create(Backend* backend, size_t size) {
    absl::StatusOr<void*> ptr = backend->AllocateBytes(size * sizeof(T));
    if (!ptr.ok()) {
      return absl::Status(ptr.status().code(),
                          absl::StrCat("allocating ", size, " elements of ", sizeof(T),
                                       " bytes: ", ptr.status().message()));
    }
    DeviceBuffer buffer;
    buffer.backend_ = backend;
    buffer.data_ = static_cast<T*>(*ptr);
    buffer.size_ = size;
    return buffer;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

  // Copies host values into elements [offset, offset + host.size()).
  // InvalidArgument when that range does not fit.
  absl::Status CopyFrom(absl::Span<const T> host, size_t offset = 0) {
    if (offset > size_ || host.size() > size_ - offset) return RangeError(offset, host.size());
    return backend_->CopyToDevice(data_ + offset, host.data(), host.size() * sizeof(T));
  }
  // Copies elements [offset, offset + host.size()) to host.
  absl::Status CopyTo(absl::Span<T> host, size_t offset = 0) const {
    if (offset > size_ || host.size() > size_ - offset) return RangeError(offset, host.size());
    return backend_->CopyToHost(host.data(), data_ + offset, host.size() * sizeof(T));
  }

 private:
  void Reset() {
    if (backend_ != nullptr) backend_->FreeBytes(data_);
    backend_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }
  absl::Status RangeError(size_t offset, size_t count) const {
    return absl::InvalidArgumentError(absl::StrCat("copy of ", count, " elements at offset ",
                                                   offset, " exceeds device buffer of ", size_,
                                                   " elements"));
  }

  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_KERNELS_DEVICE_BUFFER_H_
