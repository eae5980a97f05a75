// Values on the wire in 16 bits (TableSpec.wire_dtype): IEEE 754 binary16
// ("fp16") and bfloat16 (the upper half of a float32), both rounded to
// nearest, ties to even. Servers widen to float32 before they check, sum or
// apply (field case C09: fp16 sums overflow where float32 ones do not).
//
// Thread-safe (pure functions).
#ifndef CAIRN_COMMON_WIRE_DTYPE_H_
#define CAIRN_COMMON_WIRE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "cairn/v1/types.pb.h"
#include "common/value_pieces.h"

namespace cairn {

// FLOAT32, FLOAT16 or BFLOAT16: what values may travel as. UNSPECIFIED is
// read as FLOAT32 in a TableSpec and in a pull's TableKeys.
inline bool IsWireDtype(v1::DType d) {
  return d == v1::DTYPE_FLOAT32 || d == v1::DTYPE_FLOAT16 || d == v1::DTYPE_BFLOAT16;
}
inline v1::DType WireDtypeOrFloat32(v1::DType d) {
  return d == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_FLOAT32 : d;
}
// The dtype as error messages name it: "float32", "bfloat16", "float64".
std::string DTypeName(v1::DType d);

// Bytes per value of a wire dtype (4 or 2).
inline size_t WireBytes(v1::DType d) {
  return d == v1::DTYPE_FLOAT16 || d == v1::DTYPE_BFLOAT16 ? 2 : 4;
}

inline uint32_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}
inline float BitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

// bfloat16: the float32's upper 16 bits, rounded to nearest even; NaN stays
// NaN (quiet), values past the largest bfloat16 round to infinity.
inline uint16_t FloatToBf16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float Bf16ToFloat(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// binary16: 5 exponent bits, 10 mantissa bits; magnitudes of 65520 and more
// become infinity (the largest finite half is 65504), below 2^-24 zero;
// subnormals kept.
inline uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (x < 0x38800000u) {
    // Below 2^-14: a subnormal half counts units of 2^-24; scaling by 2^24
    // is exact, and the float to integer rounding is to nearest even.
    const float scaled = BitsFloat(x) * 16777216.0f;
    uint32_t units = static_cast<uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(units);
    if (rest > 0.5f || (rest == 0.5f && (units & 1u) != 0)) ++units;
    return static_cast<uint16_t>(sign | units);
  }
  x += 0xfffu + ((x >> 13) & 1u);  // round to nearest even at bit 13
  x -= 112u << 23;                 // exponent bias 127 -> 15
  return static_cast<uint16_t>(sign | (x >> 13));
}
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return BitsFloat(FloatBits(v) | sign);
  }
  if (exponent == 31) return BitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// Writes `n` floats as `dtype` (FLOAT32, FLOAT16 or BFLOAT16) to `out`
// (n * WireBytes(dtype) bytes; no alignment needed).
void EncodeValues(const float* in, size_t n, v1::DType dtype, char* out);
// Reads `n` values of `dtype` at `in` into floats.
void DecodeValues(const char* in, size_t n, v1::DType dtype, float* out);
// The same for the values lying in `pieces` (their bytes in all a multiple
// of WireBytes(dtype); a value may straddle two pieces): decoded where they
// lie, never joined first.
void DecodeValues(const ValuePieces& pieces, v1::DType dtype, float* out);

}  // namespace cairn

#endif  // CAIRN_COMMON_WIRE_DTYPE_H_
