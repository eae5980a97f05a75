#include "server/shard/sparse_table.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/initializer.h"
#include "common/partitioning.h"

namespace cairn {

SparseTable::SparseTable(const v1::TableSpec& spec, uint32_t num_partitions,
                         const std::vector<bool>& owned, std::unique_ptr<Optimizer> optimizer)
    : Table(spec, num_partitions, std::move(optimizer)),
      width_(static_cast<uint32_t>(spec.width())),
      slots_per_element_(optimizer_->SlotsPerElement()),
      owned_(owned) {}

absl::StatusOr<uint64_t> SparseTable::CheckKeys(const std::string& keys, size_t n) const {
  for (size_t i = 0; i < n; ++i) {
    const Key k = KeyAt(keys, i);
    const uint32_t p = SparsePartition(k, num_partitions_);
    if (!owned_[p]) {
      return absl::FailedPreconditionError(
          absl::StrCat("table ", spec_.name(), ": key ", k, " is in partition ", p,
                       ", which this server does not hold"));
    }
  }
  return static_cast<uint64_t>(n) * width_;
}

void SparseTable::Read(const std::string& keys, size_t n, std::string* out) const {
  const size_t row_bytes = width_ * sizeof(float);
  const size_t start = out->size();
  out->resize(start + n * row_bytes);
  char* dst = out->data() + start;
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = 0; i < n; ++i, dst += row_bytes) {
    const Key k = KeyAt(keys, i);
    auto it = index_.find(k);
    if (it != index_.end()) {
      std::memcpy(dst, values_.data() + static_cast<uint64_t>(it->second) * width_, row_bytes);
    } else {
      InitSparseRow(spec_, k, absl::MakeSpan(reinterpret_cast<float*>(dst), width_));
    }
  }
}

void SparseTable::Gather(const std::string& keys, size_t n, const std::string& values,
                         GradBuffer* buffer) const {
  const float* v = reinterpret_cast<const float*>(values.data());
  for (size_t i = 0; i < n; ++i) buffer->Add(KeyAt(keys, i), v + i * width_, width_);
}

uint32_t SparseTable::FindOrCreate(Key key) {
  auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(steps_.size()));
  if (inserted) {
    const size_t base = values_.size();
    values_.resize(base + width_);
    InitSparseRow(spec_, key, absl::MakeSpan(values_.data() + base, width_));
    const size_t slot_base = slots_.size();
    slots_.resize(slot_base + static_cast<size_t>(width_) * slots_per_element_);
    optimizer_->InitSlots(slots_.data() + slot_base, width_);
    steps_.push_back(0);
  }
  return it->second;
}

void SparseTable::Apply(const GradBuffer& grads) {
  absl::MutexLock lock(&mu_);
  for (const GradBuffer::Row& row : grads.rows()) {
    const uint32_t slot = FindOrCreate(row.key);
    const uint64_t off = static_cast<uint64_t>(slot) * width_;
    optimizer_->Apply(values_.data() + off, slots_.data() + off * slots_per_element_,
                      grads.RowData(row), width_, ++steps_[slot]);
  }
}

uint64_t SparseTable::NumKeys() const {
  absl::ReaderMutexLock lock(&mu_);
  return index_.size();
}

uint64_t SparseTable::NumValueBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  return values_.size() * sizeof(float);
}

}  // namespace cairn
