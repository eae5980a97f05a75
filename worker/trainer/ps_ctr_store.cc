#include "worker/trainer/ps_ctr_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace cairn {
absl::StatusOr<std::unique_ptr<PsCtrStore>> PsCtrStore::Create(
    Client* client, std::vector<BoundTable> head, size_t head_params,
    const std::vector<v1::TableSpec>& fields) {
  std::vector<std::string> names;
  std::vector<size_t> widths;
  for (const v1::TableSpec& want : fields) {
    absl::StatusOr<const v1::TableSpec*> have = client->Table(want.name());
    if (!have.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the job has no table ", want.name(), " that this worker's ctr model needs (",
                       have.status().message(),
                       "); do the worker and the coordinator use the same training section?"));
    }
    if ((*have)->kind() != v1::TABLE_KIND_SPARSE || (*have)->width() != want.width()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the job's table ", want.name(), " is ",
          (*have)->kind() == v1::TABLE_KIND_SPARSE ? "sparse" : "dense", " of width ",
          (*have)->width(), " but this worker's ctr model needs a sparse one of width ",
          want.width(), " (training.embedding.width)"));
    }
    names.push_back(want.name());
    widths.push_back(static_cast<size_t>(want.width()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PsParameterStore> head_store,
                   PsParameterStore::Create(client, std::move(head), head_params));
  return std::unique_ptr<PsCtrStore>(
      new PsCtrStore(client, std::move(head_store), std::move(names), std::move(widths)));
}

std::vector<SparseRows> PsCtrStore::RowBuffers(const std::vector<std::vector<Key>>& keys,
                                               FieldRows* rows) const {
  rows->resize(fields_.size());
  std::vector<SparseRows> tables;
  tables.reserve(fields_.size());
  for (size_t f = 0; f < fields_.size(); ++f) {
    (*rows)[f].resize(keys[f].size() * widths_[f]);
    tables.push_back(SparseRows{fields_[f], keys[f], absl::MakeSpan((*rows)[f])});
  }
  return tables;
}

std::vector<ConstSparseRows> PsCtrStore::RowGrads(const std::vector<std::vector<Key>>& keys,
                                                  const FieldRows& grads) const {
  std::vector<ConstSparseRows> tables;
  tables.reserve(fields_.size());
  for (size_t f = 0; f < fields_.size(); ++f) {
    tables.push_back(ConstSparseRows{fields_[f], keys[f], grads[f]});
  }
  return tables;
}

absl::StatusOr<absl::Span<const float>> PsCtrStore::Pull(
    const std::vector<std::vector<Key>>& keys, FieldRows* rows) {
  RETURN_IF_ERROR(client_->PullAndWait(head_->pull_buffers(), RowBuffers(keys, rows)));
  return head_->params();
}

absl::Status PsCtrStore::PushAndClock(absl::Span<const float> head_grads,
                                      const std::vector<std::vector<Key>>& keys,
                                      const FieldRows& row_grads) {
  ASSIGN_OR_RETURN(std::vector<ConstDenseBuffer> head, head_->PushBuffers(head_grads));
  return client_->PushAndClock(std::move(head), RowGrads(keys, row_grads));
}

absl::StatusOr<std::optional<absl::Span<const float>>> PsCtrStore::PushClockAndPull(
    absl::Span<const float> head_grads, const std::vector<std::vector<Key>>& keys,
    const FieldRows& row_grads, const std::vector<std::vector<Key>>& next_keys,
    FieldRows* next_rows) {
  ASSIGN_OR_RETURN(std::vector<ConstDenseBuffer> head, head_->PushBuffers(head_grads));
  // The head's next values go where the current ones are: this step's
  // compute is over.
  absl::Status ahead;
  RETURN_IF_ERROR(client_->PushClockAndPull(std::move(head), RowGrads(keys, row_grads),
                                            head_->pull_buffers(), RowBuffers(next_keys, next_rows),
                                            &ahead));
  if (!ahead.ok()) {
    LOG_WARN("{}; the next step pulls again", ahead.message());
    return std::nullopt;
  }
  return head_->params();
}

}  // namespace cairn
