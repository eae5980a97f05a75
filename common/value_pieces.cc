#include "common/value_pieces.h"

#include <cstring>

namespace cairn {

uint64_t PiecesBytes(const ValuePieces& pieces) {
  uint64_t n = 0;
  for (absl::Span<const char> p : pieces) n += p.size();
  return n;
}

void CopyPieces(const ValuePieces& pieces, char* out) {
  for (absl::Span<const char> p : pieces) {
    if (p.empty()) continue;
    std::memcpy(out, p.data(), p.size());
    out += p.size();
  }
}

}  // namespace cairn
