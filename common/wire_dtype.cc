#include "common/wire_dtype.h"

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace cairn {

std::string DTypeName(v1::DType d) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::DType_Name(d), "DTYPE_"));
}

void EncodeValues(const float* in, size_t n, v1::DType dtype, char* out) {
  if (dtype == v1::DTYPE_BFLOAT16) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t h = FloatToBf16(in[i]);
      std::memcpy(out + 2 * i, &h, 2);
    }
  } else if (dtype == v1::DTYPE_FLOAT16) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t h = FloatToHalf(in[i]);
      std::memcpy(out + 2 * i, &h, 2);
    }
  } else if (n > 0) {  // an empty buffer's pointer may be null: no memcpy then
    std::memcpy(out, in, n * sizeof(float));
  }
}

void DecodeValues(const char* in, size_t n, v1::DType dtype, float* out) {
  if (dtype == v1::DTYPE_BFLOAT16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      out[i] = Bf16ToFloat(h);
    }
  } else if (dtype == v1::DTYPE_FLOAT16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      out[i] = HalfToFloat(h);
    }
  } else if (n > 0) {
    std::memcpy(out, in, n * sizeof(float));
  }
}

}  // namespace cairn
