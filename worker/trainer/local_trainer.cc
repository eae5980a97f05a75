#include "worker/trainer/local_trainer.h"

#include "absl/strings/str_cat.h"
#include "cairn/v1/types.pb.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<LocalParameterStore>> LocalParameterStore::Create(
    std::vector<BoundTable> tables, size_t num_params) {
  std::unique_ptr<LocalParameterStore> store(new LocalParameterStore());
  store->params_.assign(num_params, 0.0f);
  for (BoundTable& t : tables) {
    if (t.offset > num_params || t.size > num_params - t.offset) {
      return absl::InvalidArgumentError(absl::StrCat("table ", t.spec.name(), " [", t.offset, ", +",
                                                     t.size, ") lies outside the model's ",
                                                     num_params, " parameters"));
    }
    absl::StatusOr<std::unique_ptr<Optimizer>> optimizer = MakeOptimizer(t.spec.optimizer());
    if (!optimizer.ok()) return Annotate(optimizer.status(), absl::StrCat("table ", t.spec.name()));
    TableState state{std::move(t), std::move(*optimizer), {}};
    state.slots.resize(static_cast<size_t>(state.optimizer->SlotsPerElement()) * state.table.size);
    state.optimizer->InitSlots(state.slots.data(), state.table.size);
    store->tables_.push_back(std::move(state));
  }
  std::vector<BoundTable> bound;
  for (const TableState& s : store->tables_) bound.push_back(s.table);
  InitParameters(bound, absl::MakeSpan(store->params_));
  return store;
}

absl::StatusOr<absl::Span<const float>> LocalParameterStore::Pull() {
  return absl::Span<const float>(params_);
}

absl::Status LocalParameterStore::PushAndClock(absl::Span<const float> grads) {
  if (grads.size() != params_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local push of ", grads.size(), " gradient floats; the model has ", params_.size()));
  }
  ++updates_;
  for (TableState& s : tables_) {
    s.optimizer->Apply(params_.data() + s.table.offset, s.slots.data(),
                       grads.data() + s.table.offset, s.table.size, updates_);
  }
  return absl::OkStatus();
}

}  // namespace cairn
