#include "server/shard/dense_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/initializer.h"
#include "common/status_macros.h"
#include "server/shard/fork_join.h"

namespace cairn {

DenseTable::DenseTable(const v1::TableSpec& spec, uint32_t num_partitions,
                       const std::vector<bool>& owned, std::unique_ptr<Optimizer> optimizer,
                       ForkJoin* helper)
    : Table(spec, num_partitions, std::move(optimizer)),
      num_elements_(DenseNumElements(spec)),
      chunk_size_(static_cast<uint64_t>(spec.chunk_size())),
      num_chunks_(NumChunks(num_elements_, chunk_size_)),
      slots_per_element_(optimizer_->SlotsPerElement()),
      helper_(helper),
      chunk_block_(num_chunks_) {
  for (auto& b : chunk_block_) b.store(-1, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  blocks_.reserve(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) {
    if (!owned[p]) continue;
    const KeyRange range =
        DensePartitionRange(num_chunks_, num_partitions, p, spec.partition_offset());
    if (range.size() == 0) continue;
    blocks_.push_back(MakeBlock(range));
    for (Key c = range.begin; c < range.end; ++c) {
      chunk_block_[c].store(static_cast<int32_t>(blocks_.size() - 1), std::memory_order_release);
    }
  }
}

std::unique_ptr<DenseTable::Block> DenseTable::MakeBlock(const KeyRange& range) const {
  auto block = std::make_unique<Block>();
  block->chunks = range;
  block->first_element = range.begin * chunk_size_;
  const uint64_t end_element = std::min(range.end * chunk_size_, num_elements_);
  block->num_values = end_element - block->first_element;
  absl::MutexLock lock(&block->mu);  // not shared yet: for the annotations
  block->values.resize(block->num_values);
  InitDenseElements(spec_, block->first_element, absl::MakeSpan(block->values));
  block->slots.resize(block->values.size() * slots_per_element_);
  // Slots are slot-major within each chunk (the optimizer's block).
  for (Key c = range.begin; c < range.end; ++c) {
    const uint64_t off = (c * chunk_size_ - block->first_element) * slots_per_element_;
    optimizer_->InitSlots(block->slots.data() + off, ChunkLength(c));
  }
  block->steps.assign(range.size(), 0);
  return block;
}

void DenseTable::AddPartition(uint32_t partition) {
  const KeyRange range =
      DensePartitionRange(num_chunks_, num_partitions_, partition, spec_.partition_offset());
  if (range.size() == 0 || BlockOf(range.begin) >= 0) return;
  absl::MutexLock lock(&mu_);
  blocks_.push_back(MakeBlock(range));
  for (Key c = range.begin; c < range.end; ++c) {
    chunk_block_[c].store(static_cast<int32_t>(blocks_.size() - 1), std::memory_order_release);
  }
}

uint32_t DenseTable::ChunkLength(Key chunk) const {
  const uint64_t begin = chunk * chunk_size_;
  return static_cast<uint32_t>(std::min(chunk_size_, num_elements_ - begin));
}

absl::StatusOr<uint64_t> DenseTable::CheckKeys(const std::string& keys, size_t n) const {
  uint64_t floats = 0;
  for (size_t i = 0; i < n; ++i) {
    const Key k = KeyAt(keys, i);
    if (k >= num_chunks_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", spec_.name(), ": key ", k, " out of range: dense table of shape [",
          absl::StrJoin(spec_.shape(), ","), "] has ", num_chunks_, " chunks (keys 0..",
          num_chunks_ - 1, ")"));
    }
    if (BlockOf(k) < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", spec_.name(), ": key ", k, " is in partition ",
          DensePartition(k, num_chunks_, num_partitions_, spec_.partition_offset()),
          ", which this server does not hold"));
    }
    floats += ChunkLength(k);
  }
  return floats;
}

uint64_t DenseTable::ValueFloats(const std::string& keys, size_t n) const {
  uint64_t floats = 0;
  for (size_t i = 0; i < n; ++i) floats += ChunkLength(KeyAt(keys, i));
  return floats;
}

void DenseTable::Read(const std::string& keys, size_t n, std::string* out) const {
  // One allocation, not one per 64 KiB chunk.
  out->reserve(out->size() + ValueFloats(keys, n) * sizeof(float));
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = 0; i < n; ++i) {
    const Key k = KeyAt(keys, i);
    const Block& b = *blocks_[BlockOf(k)];
    absl::ReaderMutexLock block_lock(&b.mu);
    const float* src = b.values.data() + (k * chunk_size_ - b.first_element);
    out->append(reinterpret_cast<const char*>(src), ChunkLength(k) * sizeof(float));
  }
}

void DenseTable::ReadTo(const std::string& keys, size_t n, float* out) const {
  // Reads only: pieces may share a block's lock.
  ForkJoin::ForRanges(helper_, n, ValueFloats(keys, n) * sizeof(float),
                      [&](size_t begin, size_t end) {
                        ReadKeyRange(keys, begin, end, out + ValueFloats(keys, begin));
                      });
}

void DenseTable::ReadKeyRange(const std::string& keys, size_t begin, size_t end,
                              float* out) const {
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = begin; i < end; ++i) {
    const Key k = KeyAt(keys, i);
    const Block& b = *blocks_[BlockOf(k)];
    absl::ReaderMutexLock block_lock(&b.mu);
    const uint32_t len = ChunkLength(k);
    std::memcpy(out, b.values.data() + (k * chunk_size_ - b.first_element), len * sizeof(float));
    out += len;
  }
}

void DenseTable::Gather(const std::string& keys, size_t n, absl::string_view values,
                        GradBuffer* buffer) const {
  const float* v = reinterpret_cast<const float*>(values.data());
  buffer->Reserve(n, values.size() / sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    const Key k = KeyAt(keys, i);
    const uint32_t len = ChunkLength(k);
    buffer->Add(k, v, len);
    v += len;
  }
}

void DenseTable::ApplyChunkLocked(Block& b, Key chunk, const float* grad, uint32_t length,
                                  float grad_scale) const {
  const uint64_t off = chunk * chunk_size_ - b.first_element;
  int64_t& step = b.steps[chunk - b.chunks.begin];
  ++step;
  optimizer_->ApplyScaled(b.values.data() + off, b.slots.data() + off * slots_per_element_,
                          grad, length, step, grad_scale);
}

void DenseTable::Apply(const GradBuffer& grads) { ApplyRows(grads, 1.0f); }

void DenseTable::ApplyScaled(GradBuffer& grads, float grad_scale) {
  ApplyRows(grads, grad_scale);
}

void DenseTable::ApplyRows(const GradBuffer& grads, float grad_scale) {
  if (grads.empty()) return;
  // Rows are distinct keys (GradBuffer sums repeats): each piece updates
  // chunks of its own.
  ForkJoin::ForRanges(SplitsOver(grads.rows().front().key, grads.rows().back().key),
                      grads.rows().size(), grads.num_floats() * sizeof(float),
                      [&](size_t begin, size_t end) {
                        ApplyRowRange(grads, begin, end, grad_scale);
                      });
}

void DenseTable::ApplyRowRange(const GradBuffer& grads, size_t begin, size_t end,
                               float grad_scale) {
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = begin; i < end; ++i) {
    const GradBuffer::Row& row = grads.rows()[i];
    Block& b = *blocks_[BlockOf(row.key)];
    absl::MutexLock block_lock(&b.mu);
    ApplyChunkLocked(b, row.key, grads.RowData(row), row.length, grad_scale);
  }
}

void DenseTable::ApplyUnique(const std::string& keys, size_t n, absl::string_view values) {
  ApplyUniqueAndRead(keys, n, values, nullptr);
}

void DenseTable::ApplyUniqueAndRead(const std::string& keys, size_t n, absl::string_view values,
                                    float* out) {
  if (n == 0) return;
  const float* g = reinterpret_cast<const float*>(values.data());
  ForkJoin::ForRanges(SplitsOver(KeyAt(keys, 0), KeyAt(keys, n - 1)), n, values.size(),
                      [&](size_t begin, size_t end) {
                        const uint64_t before = ValueFloats(keys, begin);
                        ApplyKeyRange(keys, begin, end, g + before,
                                      out == nullptr ? nullptr : out + before);
                      });
}

absl::Status DenseTable::ApplyStreamedAndRead(const std::string& keys, size_t n,
                                              absl::string_view values, float* out,
                                              const PushStream& stream, Undo* undo) {
  const float* grads = reinterpret_cast<const float*>(values.data());
  const bool check = spec().non_finite() != v1::NON_FINITE_POLICY_ALLOW;
  absl::ReaderMutexLock lock(&mu_);
  // The last chunk first: the count grows from the run's end.
  uint64_t at = values.size() / sizeof(float);  // where chunk i ends, then starts
  for (size_t i = n; i-- > 0;) {
    const Key k = KeyAt(keys, i);
    const uint32_t len = ChunkLength(k);
    at -= len;
    const float* g = grads + at;
    RETURN_IF_ERROR(stream.Await(reinterpret_cast<const char*>(g)));
    if (check && !AllFinite(reinterpret_cast<const char*>(g), len)) {
      // Names the first value of the chunk that is not finite, as a push
      // checked whole would (the chunks before it are not written yet).
      return CheckFinite(spec(), keys, values.substr(at * sizeof(float), len * sizeof(float)),
                         chunk_size_, nullptr, at);
    }
    Block& b = *blocks_[BlockOf(k)];
    absl::MutexLock block_lock(&b.mu);
    const uint64_t off = k * chunk_size_ - b.first_element;
    const uint64_t slot_floats = static_cast<uint64_t>(len) * slots_per_element_;
    float* w = b.values.data() + off;
    float* slots = b.slots.data() + off * slots_per_element_;
    const size_t saved_at = undo->floats_.size();
    undo->floats_.insert(undo->floats_.end(), w, w + len);
    undo->floats_.insert(undo->floats_.end(), slots, slots + slot_floats);
    undo->saved_.push_back(Undo::Saved{this, k, saved_at, b.steps[k - b.chunks.begin]});
    ApplyChunkLocked(b, k, g, len);
    if (out != nullptr) std::memcpy(out + at, w, len * sizeof(float));
  }
  return absl::OkStatus();
}

void DenseTable::Undo::Restore() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    DenseTable& t = *it->table;
    absl::ReaderMutexLock lock(&t.mu_);
    Block& b = *t.blocks_[t.BlockOf(it->chunk)];
    absl::MutexLock block_lock(&b.mu);
    const uint64_t off = it->chunk * t.chunk_size_ - b.first_element;
    const uint32_t len = t.ChunkLength(it->chunk);
    const float* saved = floats_.data() + it->at;
    std::copy(saved, saved + len, b.values.data() + off);
    std::copy(saved + len, saved + len + static_cast<uint64_t>(len) * t.slots_per_element_,
              b.slots.data() + off * t.slots_per_element_);
    b.steps[it->chunk - b.chunks.begin] = it->step;
  }
  Clear();
}

void DenseTable::Undo::Clear() {
  saved_.clear();
  floats_.clear();
}

ForkJoin* DenseTable::SplitsOver(Key first, Key last) const {
  // Pieces in one block would take turns for its lock.
  return BlockOf(first) != BlockOf(last) ? helper_ : nullptr;
}

void DenseTable::ApplyKeyRange(const std::string& keys, size_t begin, size_t end,
                               const float* grad, float* out) {
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = begin; i < end; ++i) {
    const Key k = KeyAt(keys, i);
    const uint32_t len = ChunkLength(k);
    Block& b = *blocks_[BlockOf(k)];
    absl::MutexLock block_lock(&b.mu);
    ApplyChunkLocked(b, k, grad, len);
    grad += len;
    if (out != nullptr) {
      std::memcpy(out, b.values.data() + (k * chunk_size_ - b.first_element), len * sizeof(float));
      out += len;
    }
  }
}

uint64_t DenseTable::NumKeys() const {
  uint64_t n = 0;
  for (const auto& b : chunk_block_) n += b.load(std::memory_order_acquire) >= 0;
  return n;
}

Table::KeyCount DenseTable::CountKeys(const std::vector<bool>& in) const {
  KeyCount count;
  for (uint32_t p = 0; p < num_partitions_ && p < in.size(); ++p) {
    if (!in[p]) continue;
    const KeyRange range =
        DensePartitionRange(num_chunks_, num_partitions_, p, spec_.partition_offset());
    for (Key c = range.begin; c < range.end; ++c) {
      if (BlockOf(c) < 0) continue;
      ++count.keys;
      count.value_bytes += ChunkLength(c) * sizeof(float);
    }
  }
  return count;
}

uint64_t DenseTable::NumValueBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  uint64_t n = 0;
  for (const std::unique_ptr<Block>& b : blocks_) n += b->num_values * sizeof(float);
  return n;
}

}  // namespace cairn

namespace cairn {

absl::StatusOr<PartitionRows> DenseTable::ExportPartition(uint32_t partition) const {
  PartitionRows rows;
  rows.slots_per_element = slots_per_element_;
  if (partition >= num_partitions_) {
    return absl::InvalidArgumentError(absl::StrCat("table ", spec_.name(), ": partition ",
                                                   partition, " of ", num_partitions_));
  }
  const KeyRange range =
      DensePartitionRange(num_chunks_, num_partitions_, partition, spec_.partition_offset());
  if (range.size() == 0) return rows;
  if (BlockOf(range.begin) < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", spec_.name(), ": partition ", partition, " is not held by this server"));
  }
  absl::ReaderMutexLock lock(&mu_);
  const Block& b = *blocks_[BlockOf(range.begin)];
  absl::ReaderMutexLock block_lock(&b.mu);
  for (Key c = range.begin; c < range.end; ++c) {
    rows.keys.push_back(c);
    rows.lengths.push_back(ChunkLength(c));
  }
  rows.steps = b.steps;
  rows.values = b.values;
  rows.slots = b.slots;
  return rows;
}

absl::Status DenseTable::ImportPartition(uint32_t partition, const PartitionRows& rows) {
  if (partition >= num_partitions_) {
    return absl::InvalidArgumentError(absl::StrCat("table ", spec_.name(), ": partition ",
                                                   partition, " of ", num_partitions_));
  }
  const KeyRange range =
      DensePartitionRange(num_chunks_, num_partitions_, partition, spec_.partition_offset());
  if (range.size() > 0 && BlockOf(range.begin) < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", spec_.name(), ": partition ", partition, " is not held by this server"));
  }
  RETURN_IF_ERROR(CheckRowsShape(spec_.name(), rows, slots_per_element_));
  if (rows.keys.size() != range.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", spec_.name(), ": partition ", partition, " has ", range.size(),
        " chunks (keys ", range.begin, "..", range.end, "), rows hold ", rows.keys.size()));
  }
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    const Key want = range.begin + i;
    if (rows.keys[i] != want || rows.lengths[i] != ChunkLength(want)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", spec_.name(), ": partition ", partition, " row ", i, " is key ",
          rows.keys[i], " of length ", rows.lengths[i], ", expected key ", want,
          " of length ", ChunkLength(want)));
    }
  }
  if (range.size() == 0) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  Block& b = *blocks_[BlockOf(range.begin)];
  absl::MutexLock block_lock(&b.mu);
  b.steps = rows.steps;
  b.values = rows.values;
  b.slots = rows.slots;
  return absl::OkStatus();
}

}  // namespace cairn
