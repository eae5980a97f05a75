#include "common/hash.h"

#include <xxhash.h>

namespace cairn {

uint64_t Xxh64(const void* data, size_t size) { return XXH64(data, size, /*seed=*/0); }

}  // namespace cairn
