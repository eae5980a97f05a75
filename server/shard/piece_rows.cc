#include "server/shard/piece_rows.h"

#include <algorithm>
#include <cstring>

namespace cairn {

PieceRows::PieceRows(const ValuePieces& pieces, size_t row_floats, size_t held_rows)
    : pieces_(pieces),
      row_bytes_(row_floats * sizeof(float)),
      row_floats_(row_floats),
      held_rows_(std::max<size_t>(held_rows, 1)),
      copied_(std::make_unique_for_overwrite<float[]>(row_floats * held_rows_)) {}

const UnalignedFloat* PieceRows::RowElsewhere(uint64_t at) {
  if (at < piece_begin_) {
    piece_ = 0;
    piece_begin_ = 0;
  }
  while (at >= piece_begin_ + pieces_[piece_].size()) {
    piece_begin_ += pieces_[piece_].size();
    ++piece_;
  }
  const size_t offset = static_cast<size_t>(at - piece_begin_);
  if (offset + row_bytes_ <= pieces_[piece_].size()) {
    return reinterpret_cast<const UnalignedFloat*>(pieces_[piece_].data() + offset);
  }
  // Across pieces: copied, the cursor left where the row starts.
  float* const copy = copied_.get() + next_copy_ * row_floats_;
  next_copy_ = (next_copy_ + 1) % held_rows_;
  char* out = reinterpret_cast<char*>(copy);
  size_t left = row_bytes_;
  size_t from = offset;
  for (size_t p = piece_; left > 0; ++p, from = 0) {
    const size_t take = std::min(left, pieces_[p].size() - from);
    std::memcpy(out, pieces_[p].data() + from, take);
    out += take;
    left -= take;
  }
  return copy;
}

}  // namespace cairn
