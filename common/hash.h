// The project's fixed hashes. Their values are part of what Cairn stores and
// computes (sparse placement, initial values, checkpoint checksums, the
// config hash, data order), so they never change between builds or machines.
// Pure functions: thread-safe.
#ifndef CAIRN_COMMON_HASH_H_
#define CAIRN_COMMON_HASH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cairn {

// SplitMix64's output function: a bijection of uint64 with full avalanche,
// used as a counter-based generator (value = SplitMix64(seed ^ counter)).
// Source: Steele, Lea and Flood, "Fast Splittable Pseudorandom Number
// Generators" (OOPSLA 2014), with the constants of Vigna's splitmix64.c.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// XXH64 with seed 0 (xxHash, doc/xxhash_spec.md) of `size` bytes at `data`,
// through libxxhash.
uint64_t Xxh64(const void* data, size_t size);
inline uint64_t Xxh64(std::string_view bytes) { return Xxh64(bytes.data(), bytes.size()); }

}  // namespace cairn

#endif  // CAIRN_COMMON_HASH_H_
