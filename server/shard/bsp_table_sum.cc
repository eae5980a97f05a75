#include "server/shard/bsp_table_sum.h"

#include <utility>

#include "server/shard/fork_join.h"

namespace cairn {

GradBuffer BspTableSum::TakeBuffer() {
  GradBuffer buffer;
  if (!spare_->empty()) {
    buffer = std::move(spare_->back());
    spare_->pop_back();
  } else if (reserve_rows_ > 0) {
    buffer.Reserve(reserve_rows_, reserve_floats_);
  }
  return buffer;
}

GradBuffer& BspTableSum::WaitingOf(uint32_t worker) {
  auto it = waiting_.find(worker);
  if (it != waiting_.end()) return it->second;
  return waiting_.emplace(worker, TakeBuffer()).first->second;
}

void BspTableSum::Add(uint32_t worker, Key key, const float* grad, uint32_t length) {
  if (!fold_ || worker > 1) {
    WaitingOf(worker).Add(key, grad, length);
    return;
  }
  const uint8_t bit = worker == 0 ? kWorker0 : kWorker1;
  const int64_t row = sum_.IndexOf(key);
  if (row >= 0 && (first_of_[static_cast<size_t>(row)] & bit) != 0) {
    WaitingOf(worker).Add(key, grad, length);  // a second gradient of the row
    return;
  }
  AddToRunningSum(key, grad, length, bit);  // the other's first, if there, + this: either order
}

void BspTableSum::AddRows(uint32_t worker, const std::string& keys, size_t n,
                          const float* grads, absl::FunctionRef<uint32_t(Key)> length_of,
                          ForkJoin* helper) {
  struct Deferred {
    size_t row;  // in sum_
    const float* grad;
    uint32_t length;
  };
  std::vector<Deferred> deferred;
  uint64_t deferred_floats = 0;
  const bool folds = fold_ && worker <= 1;
  const uint8_t bit = worker == 0 ? kWorker0 : kWorker1;
  for (size_t i = 0; i < n; ++i) {
    const Key key = KeyAt(keys, i);
    const uint32_t length = length_of(key);
    const int64_t row = folds ? sum_.IndexOf(key) : -1;
    if (row >= 0 && (first_of_[static_cast<size_t>(row)] & bit) == 0) {
      // The other worker's first gradient is there: this one's first is
      // added to it (a later repeat of the key in this push waits).
      first_of_[static_cast<size_t>(row)] |= bit;
      in_sum_ |= bit;
      deferred.push_back({static_cast<size_t>(row), grads, length});
      deferred_floats += length;
    } else {
      Add(worker, key, grads, length);
    }
    grads += length;
  }
  // Rows' places in sum_ hold as it grows; their addresses are taken now.
  ForkJoin::ForRanges(helper, deferred.size(), deferred_floats * sizeof(float),
                      [&](size_t begin, size_t end) {
                        for (size_t d = begin; d < end; ++d) {
                          float* dst = sum_.MutableRowData(deferred[d].row);
                          const float* g = deferred[d].grad;
                          for (uint32_t j = 0; j < deferred[d].length; ++j) dst[j] += g[j];
                        }
                      });
}

void BspTableSum::AddAll(uint32_t worker, GradBuffer&& rows) {
  if ((!fold_ || worker > 1) && !waiting_.contains(worker)) {
    waiting_.emplace(worker, std::move(rows));  // no copy
    return;
  }
  for (const GradBuffer::Row& r : rows.rows()) Add(worker, r.key, rows.RowData(r), r.length);
}

void BspTableSum::AddToRunningSum(Key key, const float* grad, uint32_t length, uint8_t first_of) {
  if (!sum_taken_) {
    sum_ = TakeBuffer();
    sum_taken_ = true;
  }
  const int64_t row = sum_.IndexOf(key);
  sum_.Add(key, grad, length);
  if (row < 0) {
    first_of_.push_back(first_of);
  } else {
    first_of_[static_cast<size_t>(row)] |= first_of;
  }
  in_sum_ |= first_of;
}

void BspTableSum::AddWaiting(uint32_t worker, Key key, const float* grad, uint32_t length) {
  WaitingOf(worker).Add(key, grad, length);
}

int BspTableSum::Contributors() const {
  int n = 0;
  if ((in_sum_ & kWorker0) != 0) ++n;
  if ((in_sum_ & kWorker1) != 0) ++n;
  for (const auto& [worker, rows] : waiting_) {
    // Workers 0 and 1 wait only with second gradients: counted above.
    if (worker > 1 || (in_sum_ & (worker == 0 ? kWorker0 : kWorker1)) == 0) ++n;
  }
  return n;
}

GradBuffer* BspTableSum::Close(bool mean, float* scale) {
  *scale = 1.0f;
  GradBuffer* result = sum_.empty() ? nullptr : &sum_;
  for (auto& [worker, rows] : waiting_) {
    if (result == nullptr) {
      result = &rows;  // the first term is taken as it is
    } else {
      result->AddAll(rows);
    }
  }
  if (result == nullptr) return nullptr;
  const int n = Contributors();
  if (mean && n > 1) *scale = 1.0f / static_cast<float>(n);
  return result;
}

const GradBuffer& BspTableSum::Close(bool mean) {
  static const GradBuffer* const kEmpty = new GradBuffer();
  float scale = 1.0f;
  GradBuffer* rows = Close(mean, &scale);
  if (rows == nullptr) return *kEmpty;
  if (scale != 1.0f) rows->Scale(scale);
  return *rows;
}

void BspTableSum::Recycle() {
  const size_t in_use = waiting_.size() + (sum_taken_ ? 1 : 0);
  auto keep = [&](GradBuffer& buffer) {
    if (spare_->size() >= in_use) return;
    buffer.Clear();
    spare_->push_back(std::move(buffer));
  };
  if (sum_taken_) keep(sum_);
  for (auto& [worker, rows] : waiting_) keep(rows);
  sum_ = GradBuffer();
  sum_taken_ = false;
  first_of_.clear();
  in_sum_ = 0;
  waiting_.clear();
}

}  // namespace cairn
