// Packing keys and values to and from the wire's little-endian `bytes`.
//
// Keys: uint64, little-endian, 8 bytes each. Values: float32, little-endian,
// 4 bytes each. The machines Cairn targets are little-endian; the static_assert
// keeps a big-endian build from silently producing the wrong bytes.
#ifndef CAIRN_COMMON_BYTES_H_
#define CAIRN_COMMON_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/types/span.h"

namespace cairn {

static_assert(std::endian::native == std::endian::little,
              "the wire encoding assumes a little-endian host");

using Key = uint64_t;

inline void AppendKeys(absl::Span<const Key> keys, std::string* out) {
  out->append(reinterpret_cast<const char*>(keys.data()), keys.size() * sizeof(Key));
}
inline void AppendFloats(absl::Span<const float> values, std::string* out) {
  out->append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}
inline std::string KeysToBytes(absl::Span<const Key> keys) {
  std::string s;
  AppendKeys(keys, &s);
  return s;
}
inline std::string FloatsToBytes(absl::Span<const float> values) {
  std::string s;
  AppendFloats(values, &s);
  return s;
}

// Views over received bytes. Callers check the byte length is a multiple of
// the element size first (NumKeys / NumFloats return false otherwise).
inline bool NumKeys(const std::string& bytes, size_t* n) {
  if (bytes.size() % sizeof(Key) != 0) return false;
  *n = bytes.size() / sizeof(Key);
  return true;
}
inline bool NumFloats(const std::string& bytes, size_t* n) {
  if (bytes.size() % sizeof(float) != 0) return false;
  *n = bytes.size() / sizeof(float);
  return true;
}
// Reads key i (unaligned-safe).
inline Key KeyAt(const std::string& bytes, size_t i) {
  Key k;
  std::memcpy(&k, bytes.data() + i * sizeof(Key), sizeof(Key));
  return k;
}
inline void CopyFloats(const std::string& bytes, float* out) {
  std::memcpy(out, bytes.data(), bytes.size());
}

}  // namespace cairn

#endif  // CAIRN_COMMON_BYTES_H_
