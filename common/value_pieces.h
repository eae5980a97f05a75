// The value bytes of one table of a request or answer, as they lie in
// memory: one piece when they are contiguous (a protobuf `bytes` field, a
// range of a shared region), several when gRPC received them (the slices
// the transport read into; a 1 MiB message arrives in about 20, at any
// byte alignment). Concatenated, the pieces are the table's
// TableValues.values.
//
// Thread-safe (pure functions); the pieces point into memory their holder
// keeps alive.
#ifndef CAIRN_COMMON_VALUE_PIECES_H_
#define CAIRN_COMMON_VALUE_PIECES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace cairn {

using ValuePieces = absl::InlinedVector<absl::Span<const char>, 1>;

// One piece: `bytes`.
inline ValuePieces OnePiece(absl::string_view bytes) {
  return ValuePieces{absl::Span<const char>(bytes.data(), bytes.size())};
}

// The bytes of all pieces together.
uint64_t PiecesBytes(const ValuePieces& pieces);

// Copies the pieces, in order, to `out` (PiecesBytes(pieces) bytes).
void CopyPieces(const ValuePieces& pieces, char* out);

// Walks the pieces' values of `width` bytes each (1 to 8; the pieces'
// bytes a multiple of it), in order: calls run(bytes, count) on each run
// of whole values where it lies, and on each value cut by a piece's end
// put together alone (count 1, in a buffer of this call's; any
// alignment either way). Stops at the first call that returns false and
// returns false; true when every call returned true.
template <typename Run>
bool ForEachValueRun(const ValuePieces& pieces, size_t width, Run run) {
  char cut[8];      // a value cut by a piece's end
  size_t held = 0;  // its bytes so far
  for (absl::Span<const char> piece : pieces) {
    const char* p = piece.data();
    size_t left = piece.size();
    if (held > 0) {
      const size_t take = std::min(width - held, left);
      std::memcpy(cut + held, p, take);
      held += take;
      p += take;
      left -= take;
      if (held < width) continue;  // the piece ended inside it again
      held = 0;
      if (!run(static_cast<const char*>(cut), size_t{1})) return false;
    }
    const size_t whole = left / width;
    if (whole > 0 && !run(p, whole)) return false;
    held = left - whole * width;
    std::memcpy(cut, p + whole * width, held);
  }
  return true;
}

}  // namespace cairn

#endif  // CAIRN_COMMON_VALUE_PIECES_H_
