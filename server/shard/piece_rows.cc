#include "server/shard/piece_rows.h"

#include <algorithm>
#include <cstring>

namespace cairn {

PieceRows::PieceRows(const ValuePieces& pieces, size_t row_floats)
    : pieces_(pieces),
      row_bytes_(row_floats * sizeof(float)),
      copied_(std::make_unique_for_overwrite<float[]>(row_floats)) {}

const UnalignedFloat* PieceRows::Row(size_t i) {
  const uint64_t at = static_cast<uint64_t>(i) * row_bytes_;
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
  char* out = reinterpret_cast<char*>(copied_.get());
  size_t left = row_bytes_;
  size_t from = offset;
  for (size_t p = piece_; left > 0; ++p, from = 0) {
    const size_t take = std::min(left, pieces_[p].size() - from);
    std::memcpy(out, pieces_[p].data() + from, take);
    out += take;
    left -= take;
  }
  return copied_.get();
}

}  // namespace cairn
