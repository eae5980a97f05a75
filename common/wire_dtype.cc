#include "common/wire_dtype.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace cairn {
namespace {

// Bfloat16 conversions eight values at a time, with SSE2 (every x86-64
// CPU): the bits of FloatToBf16 and Bf16ToFloat. Return how many values
// they converted (a multiple of 8); the caller converts the rest.
#if defined(__SSE2__)
size_t EncodeBf16Vector(const float* in, size_t n, char* out) {
  const __m128i one = _mm_set1_epi32(1);
  const __m128i round = _mm_set1_epi32(0x7fff);
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff);
  const __m128i inf = _mm_set1_epi32(0x7f800000);
  const __m128i quiet = _mm_set1_epi32(0x40);
  // The upper halves of four float32s, rounded to nearest even, NaNs kept
  // NaN (quiet), as 32-bit lanes in [0, 0xffff].
  auto upper = [&](__m128i x) {
    const __m128i rounded =
        _mm_srli_epi32(_mm_add_epi32(x, _mm_add_epi32(round, _mm_and_si128(_mm_srli_epi32(x, 16),
                                                                             one))),
                       16);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(x, magnitude), inf);
    const __m128i kept = _mm_or_si128(_mm_srli_epi32(x, 16), quiet);
    const __m128i h = _mm_or_si128(_mm_and_si128(nan, kept), _mm_andnot_si128(nan, rounded));
    // Sign-extended from 16 bits, so that the signed pack keeps the bits.
    return _mm_srai_epi32(_mm_slli_epi32(h, 16), 16);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i lo = upper(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    const __m128i hi = upper(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 4)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_packs_epi32(lo, hi));
  }
  return i;
}

size_t DecodeBf16Vector(const char* in, size_t n, float* out) {
  // Zeros interleaved below each bfloat16 make its float32.
  const __m128i zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi16(zero, h));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 4), _mm_unpackhi_epi16(zero, h));
  }
  return i;
}
#else
size_t EncodeBf16Vector(const float*, size_t, char*) { return 0; }
size_t DecodeBf16Vector(const char*, size_t, float*) { return 0; }
#endif

}  // namespace

std::string DTypeName(v1::DType d) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::DType_Name(d), "DTYPE_"));
}

void EncodeValues(const float* in, size_t n, v1::DType dtype, char* out) {
  if (dtype == v1::DTYPE_BFLOAT16) {
    for (size_t i = EncodeBf16Vector(in, n, out); i < n; ++i) {
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
    for (size_t i = DecodeBf16Vector(in, n, out); i < n; ++i) {
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

void DecodeValues(const ValuePieces& pieces, v1::DType dtype, float* out) {
  ForEachValueRun(pieces, WireBytes(dtype), [dtype, &out](const char* bytes, size_t n) {
    DecodeValues(bytes, n, dtype, out);
    out += n;
    return true;
  });
}

}  // namespace cairn
