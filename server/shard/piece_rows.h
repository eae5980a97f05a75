// A sparse push's gradient rows read where gRPC received them: the value
// bytes lie in several pieces (common/value_pieces.h) at any byte
// alignment, so a row is used in place when it lies whole in one piece,
// at whatever address (the optimizers read UnalignedFloat), and is copied
// alone into a row of this object's only when a piece's end cuts it. A
// whole push is never joined into one buffer first.
#ifndef CAIRN_SERVER_SHARD_PIECE_ROWS_H_
#define CAIRN_SERVER_SHARD_PIECE_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/unaligned_float.h"
#include "common/value_pieces.h"

namespace cairn {

// Rows of `row_floats` float32 values each, end to end in `pieces` (their
// bytes a whole number of rows). Not thread-safe; `pieces` must outlive it.
class PieceRows {
 public:
  // `held_rows` (>= 1): how many copied rows stay valid at once, for a
  // caller that asks for several rows before it reads them.
  PieceRows(const ValuePieces& pieces, size_t row_floats, size_t held_rows = 1);

  // Row i's `row_floats` values: in place at any byte address, or, cut by a
  // piece's end, copied into a row of this object's (valid through the next
  // held_rows - 1 calls; the copies take turns).
  // i < the number of rows. Calls with i not decreasing take constant time
  // each; a lower i starts over from the first piece.
  const UnalignedFloat* Row(size_t i) {
    // Inline for the common case: the row lies in the piece the last one
    // started in.
    const uint64_t at = static_cast<uint64_t>(i) * row_bytes_;
    if (at >= piece_begin_ && at + row_bytes_ <= piece_begin_ + pieces_[piece_].size()) {
      return reinterpret_cast<const UnalignedFloat*>(pieces_[piece_].data() +
                                                     (at - piece_begin_));
    }
    return RowElsewhere(at);
  }

 private:
  // Row() for a row at byte `at` that starts in another piece or is cut
  // by its piece's end.
  const UnalignedFloat* RowElsewhere(uint64_t at);

  const ValuePieces& pieces_;
  const size_t row_bytes_;
  const size_t row_floats_;
  const size_t held_rows_;
  size_t piece_ = 0;           // the piece the last row started in
  uint64_t piece_begin_ = 0;   // its first byte's offset among all the bytes
  std::unique_ptr<float[]> copied_;  // held_rows_ rows
  size_t next_copy_ = 0;             // the row of copied_ the next copy goes to
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_PIECE_ROWS_H_
