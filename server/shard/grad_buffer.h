// Gradient rows summed per key: the unit the optimizer applies.
//
// A push's keys may repeat and come unsorted; Add() sums every occurrence of
// a key into one row, so a non-linear optimizer (Adagrad, Adam) sees each key
// once per update with the summed gradient (field case B07). Rows have a
// fixed length per buffer except for dense tables, whose last chunk may be
// shorter: each key remembers its own length.
//
// Not thread-safe; owned by one table's state under its lock.
#ifndef CAIRN_SERVER_SHARD_GRAD_BUFFER_H_
#define CAIRN_SERVER_SHARD_GRAD_BUFFER_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/bytes.h"
#include "common/unaligned_float.h"

namespace cairn {

class GradBuffer {
 public:
  struct Row {
    Key key;
    uint64_t offset;  // into data()
    uint32_t length;  // floats
  };

  // Adds `length` floats of gradient for `key` (summed into an existing row),
  // read at any byte address. A key's length must not change between calls.
  void Add(Key key, const UnalignedFloat* grad, uint32_t length) {
    auto [it, inserted] = index_.try_emplace(key, rows_.size());
    if (inserted) {
      const size_t at = data_.size();
      rows_.push_back(Row{key, at, length});
      data_.resize(at + length);
      std::memcpy(data_.data() + at, grad, length * sizeof(float));
      return;
    }
    float* dst = data_.data() + rows_[it->second].offset;
    for (uint32_t i = 0; i < length; ++i) dst[i] += grad[i];
  }

  // Room for `rows` more rows of `floats` more floats in all, so a push of
  // known size is gathered without regrowing.
  void Reserve(size_t rows, size_t floats) {
    index_.reserve(index_.size() + rows);
    rows_.reserve(rows_.size() + rows);
    data_.reserve(data_.size() + floats);
  }

  // Adds every row of `other`, scaled by nothing (plain sum).
  void AddAll(const GradBuffer& other) {
    for (const Row& r : other.rows_) Add(r.key, other.data_.data() + r.offset, r.length);
  }

  // Empties the buffer and keeps the memory of its rows and values, so a
  // buffer refilled with rows of the same size allocates nothing.
  void Clear() {
    index_.clear();
    rows_.clear();
    data_.clear();
  }

  void Scale(float factor) {
    for (float& v : data_) v *= factor;
  }

  // Position of `key`'s row in rows(), or -1 when it has none.
  int64_t IndexOf(Key key) const {
    auto it = index_.find(key);
    return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
  }

  const std::vector<Row>& rows() const { return rows_; }
  const float* RowData(const Row& r) const { return data_.data() + r.offset; }
  // The values of the row at `index` in rows(), to add into in place.
  float* MutableRowData(size_t index) { return data_.data() + rows_[index].offset; }
  bool empty() const { return rows_.empty(); }
  size_t num_floats() const { return data_.size(); }

 private:
  absl::flat_hash_map<Key, uint64_t> index_;  // key -> position in rows_
  std::vector<Row> rows_;                     // first-seen order
  std::vector<float> data_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_GRAD_BUFFER_H_
