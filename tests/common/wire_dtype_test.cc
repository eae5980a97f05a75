// 16-bit values on the wire (common/wire_dtype.h): rounding to nearest even,
// the edges of each format, and exact round trips of every 16-bit pattern.
#include "common/wire_dtype.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace cairn {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST_CASE("bfloat16 keeps the upper half of a float32, rounded to nearest even", "[wire_dtype]") {
  CHECK(FloatToBf16(1.0f) == 0x3f80);
  CHECK(FloatToBf16(-2.0f) == 0xc000);
  CHECK(Bf16ToFloat(0x3f80) == 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even one (1).
  CHECK(FloatToBf16(1.0f + 0.00390625f) == 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  CHECK(FloatToBf16(1.0f + 3 * 0.00390625f) == 0x3f82);
  CHECK(FloatToBf16(1.0f + 0.005f) == 0x3f81);  // above the tie: up
  CHECK(FloatToBf16(kInf) == 0x7f80);
  CHECK(FloatToBf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds past the largest
  CHECK(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(FloatToBf16(f) == h);
  }
}

TEST_CASE("float16 rounds to nearest even, overflows to infinity, keeps subnormals",
          "[wire_dtype]") {
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(10000.0f) == 0x70e2);
  CHECK(HalfToFloat(0x70e2) == 10000.0f);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);   // the largest finite half
  CHECK(FloatToHalf(65519.0f) == 0x7bff);   // still rounds down
  CHECK(FloatToHalf(65520.0f) == 0x7c00);   // the tie goes to infinity (even)
  CHECK(FloatToHalf(80000.0f) == 0x7c00);
  CHECK(FloatToHalf(-kInf) == 0xfc00);
  CHECK(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(FloatToHalf(std::ldexp(1.0f, -14)) == 0x0400);   // the smallest normal
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);   // the smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -25)) == 0x0000);   // a tie: to even (0)
  CHECK(FloatToHalf(std::ldexp(3.0f, -25)) == 0x0002);   // a tie: to even (2)
  CHECK(FloatToHalf(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(FloatToHalf(-std::ldexp(1.0f, -24)) == 0x8001);
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): even is 1.
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(FloatToHalf(f) == h);
  }
}

TEST_CASE("EncodeValues and DecodeValues move whole buffers of each dtype", "[wire_dtype]") {
  const std::vector<float> in = {0.5f, -3.25f, 1e-3f, 70000.0f, 0.0f};
  for (v1::DType d : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    std::vector<char> wire(in.size() * WireBytes(d) + 1);  // +1: an unaligned start
    EncodeValues(in.data(), in.size(), d, wire.data() + 1);
    std::vector<float> out(in.size());
    DecodeValues(wire.data() + 1, in.size(), d, out.data());
    for (size_t i = 0; i < in.size(); ++i) {
      const float expected = d == v1::DTYPE_FLOAT32    ? in[i]
                             : d == v1::DTYPE_FLOAT16 ? HalfToFloat(FloatToHalf(in[i]))
                                                      : Bf16ToFloat(FloatToBf16(in[i]));
      CHECK(out[i] == expected);
    }
  }
  CHECK(WireBytes(v1::DTYPE_FLOAT32) == 4);
  CHECK(WireBytes(v1::DTYPE_BFLOAT16) == 2);
  CHECK_FALSE(IsWireDtype(v1::DTYPE_FLOAT64));
  CHECK(WireDtypeOrFloat32(v1::DTYPE_UNSPECIFIED) == v1::DTYPE_FLOAT32);
}

TEST_CASE("EncodeValues and DecodeValues of bfloat16 give each value's bits, whatever its "
          "place in the buffer",
          "[wire_dtype]") {
  // Every kind of float32 (ties, NaNs with payloads, infinities,
  // subnormals, carries into the exponent) at every place of a buffer whose
  // length is no multiple of a vector's, from an odd address.
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0x7f800001u, 0xffffffffu, 0x7fbfffffu, 0x00000001u, 0x3f808000u,
                                0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x477fefffu};
  uint32_t state = 12345;
  while (bits.size() < 1003) {
    state = state * 1664525u + 1013904223u;
    bits.push_back(state);
  }
  std::vector<float> in(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(&in[i], &bits[i], sizeof(float));
  std::vector<char> wire(in.size() * 2 + 1);
  EncodeValues(in.data(), in.size(), v1::DTYPE_BFLOAT16, wire.data() + 1);
  std::vector<float> out(in.size());
  DecodeValues(wire.data() + 1, in.size(), v1::DTYPE_BFLOAT16, out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("value " << i << ", bits 0x" << std::hex << bits[i]);
    uint16_t h;
    std::memcpy(&h, wire.data() + 1 + 2 * i, 2);
    REQUIRE(h == FloatToBf16(in[i]));
    uint32_t back;
    std::memcpy(&back, &out[i], sizeof(back));
    REQUIRE(back == static_cast<uint32_t>(h) << 16);
  }
}

TEST_CASE("DecodeValues of values in pieces, cut anywhere, gives the bits of the joined values",
          "[wire_dtype]") {
  std::vector<float> in(301);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.37f * static_cast<float>(i) - 41.5f;
  for (v1::DType dtype : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    std::string wire(in.size() * WireBytes(dtype), '\0');
    EncodeValues(in.data(), in.size(), dtype, wire.data());
    std::vector<float> joined(in.size());
    DecodeValues(wire.data(), in.size(), dtype, joined.data());
    for (size_t cut : {size_t{1}, size_t{3}, size_t{7}, size_t{64}, wire.size()}) {
      CAPTURE(dtype, cut);
      ValuePieces pieces;
      for (size_t at = 0; at < wire.size(); at += cut) {
        pieces.push_back(absl::Span<const char>(wire.data() + at, std::min(cut, wire.size() - at)));
      }
      std::vector<float> out(in.size(), -1.0f);
      DecodeValues(pieces, dtype, out.data());
      CHECK(std::memcmp(out.data(), joined.data(), out.size() * sizeof(float)) == 0);
    }
  }
}

}  // namespace
}  // namespace cairn
