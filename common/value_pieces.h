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

#include <cstdint>

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

}  // namespace cairn

#endif  // CAIRN_COMMON_VALUE_PIECES_H_
