// Argument checks shared by the kernels' host APIs and their CPU references,
// so both reject the same inputs with the same messages.
//
// Thread-safe (pure functions).
#ifndef CAIRN_KERNELS_SHAPE_CHECK_H_
#define CAIRN_KERNELS_SHAPE_CHECK_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cairn {

// InvalidArgument unless 0 <= rows and 1 <= cols, both within int32 (what
// cuBLAS and the kernels index with), and rows * cols fits in int64.
inline absl::Status CheckMatrixShape(absl::string_view op, int64_t rows, int64_t cols) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (rows < 0 || cols < 1 || rows > kMax || cols > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": bad shape rows=", rows, " cols=", cols,
                     " (need 0 <= rows <= 2^31-1 and 1 <= cols <= 2^31-1)"));
  }
  return absl::OkStatus();
}

// InvalidArgument when `ptr` is null but `count` elements are to be accessed.
inline absl::Status CheckPointer(absl::string_view op, absl::string_view name, const void* ptr,
                                 int64_t count) {
  if (ptr == nullptr && count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", name, " is null but ", count, " elements are needed"));
  }
  return absl::OkStatus();
}

}  // namespace cairn

#endif  // CAIRN_KERNELS_SHAPE_CHECK_H_
