#include "worker/trainer/ctr_store.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/initializer.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::optional<absl::Span<const float>>> CtrParameterStore::PushClockAndPull(
    absl::Span<const float> head_grads, const std::vector<std::vector<Key>>& keys,
    const FieldRows& row_grads, const std::vector<std::vector<Key>>& /*next_keys*/,
    FieldRows* /*next_rows*/) {
  RETURN_IF_ERROR(PushAndClock(head_grads, keys, row_grads));
  return std::nullopt;
}

absl::StatusOr<LocalSparseRows> LocalSparseRows::Create(const v1::TableSpec& spec) {
  absl::StatusOr<std::unique_ptr<Optimizer>> optimizer = MakeOptimizer(spec.optimizer());
  if (!optimizer.ok()) return Annotate(optimizer.status(), absl::StrCat("table ", spec.name()));
  return LocalSparseRows(spec, *std::move(optimizer));
}

LocalSparseRows::LocalSparseRows(const v1::TableSpec& spec, std::unique_ptr<Optimizer> optimizer)
    : spec_(spec), width_(static_cast<size_t>(spec.width())), optimizer_(std::move(optimizer)) {}

void LocalSparseRows::Read(absl::Span<const Key> keys, absl::Span<float> out) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::Span<float> row = out.subspan(i * width_, width_);
    auto it = index_.find(keys[i]);
    if (it != index_.end()) {
      std::memcpy(row.data(), values_.data() + it->second * width_, width_ * sizeof(float));
    } else {
      InitSparseRow(spec_, keys[i], row);
    }
  }
}

void LocalSparseRows::Apply(absl::Span<const Key> keys, absl::Span<const float> grads) {
  const size_t per_row = static_cast<size_t>(optimizer_->SlotsPerElement()) * width_;
  for (size_t i = 0; i < keys.size(); ++i) {
    const Key key = keys[i];
    auto it = index_.find(key);
    if (it == index_.end()) {
      if (spec_.min_count() > 1) {
        uint32_t& seen = pending_[key];
        if (++seen < spec_.min_count()) continue;  // counted, not stored
        pending_.erase(key);
      }
      const uint32_t slot = static_cast<uint32_t>(steps_.size());
      it = index_.emplace(key, slot).first;
      values_.resize(values_.size() + width_);
      InitSparseRow(spec_, key, absl::MakeSpan(values_.data() + slot * width_, width_));
      slots_.resize(slots_.size() + per_row);
      optimizer_->InitSlots(slots_.data() + slot * per_row, width_);
      steps_.push_back(0);
    }
    const size_t slot = it->second;
    optimizer_->Apply(values_.data() + slot * width_, slots_.data() + slot * per_row,
                      grads.data() + i * width_, width_, ++steps_[slot]);
  }
}

absl::StatusOr<std::unique_ptr<LocalCtrStore>> LocalCtrStore::Create(
    std::vector<BoundTable> head, size_t head_params, const std::vector<v1::TableSpec>& fields) {
  std::unique_ptr<LocalCtrStore> store(new LocalCtrStore());
  ASSIGN_OR_RETURN(store->head_, LocalParameterStore::Create(std::move(head), head_params));
  for (const v1::TableSpec& spec : fields) {
    ASSIGN_OR_RETURN(LocalSparseRows rows, LocalSparseRows::Create(spec));
    store->fields_.push_back(std::move(rows));
  }
  return store;
}

absl::StatusOr<absl::Span<const float>> LocalCtrStore::Pull(
    const std::vector<std::vector<Key>>& keys, FieldRows* rows) {
  rows->resize(fields_.size());
  for (size_t f = 0; f < fields_.size(); ++f) {
    (*rows)[f].resize(keys[f].size() * fields_[f].width());
    fields_[f].Read(keys[f], absl::MakeSpan((*rows)[f]));
  }
  return head_->Pull();
}

absl::Status LocalCtrStore::PushAndClock(absl::Span<const float> head_grads,
                                         const std::vector<std::vector<Key>>& keys,
                                         const FieldRows& row_grads) {
  RETURN_IF_ERROR(head_->PushAndClock(head_grads));
  for (size_t f = 0; f < fields_.size(); ++f) fields_[f].Apply(keys[f], row_grads[f]);
  return absl::OkStatus();
}

}  // namespace cairn
