#include "worker/trainer/ps_trainer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/types.pb.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<PsParameterStore>> PsParameterStore::Create(
    Client* client, std::vector<BoundTable> tables, size_t num_params) {
  for (const BoundTable& t : tables) {
    absl::StatusOr<const v1::TableSpec*> job_table = client->Table(t.spec.name());
    if (!job_table.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the job has no table ", t.spec.name(), " that this worker's model needs (",
                       job_table.status().message(),
                       "); do the worker and the coordinator use the same "
                       "training.layers?"));
    }
    const v1::TableSpec& spec = **job_table;
    const bool same_shape = std::equal(spec.shape().begin(), spec.shape().end(),
                                       t.spec.shape().begin(), t.spec.shape().end());
    if (spec.kind() != v1::TABLE_KIND_DENSE || !same_shape) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the job's table ", t.spec.name(), " has shape [", absl::StrJoin(spec.shape(), ", "),
          "] but this worker's model needs a dense [", absl::StrJoin(t.spec.shape(), ", "), "]"));
    }
    if (t.offset > num_params || t.size > num_params - t.offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", t.spec.name(), " lies outside the model's ", num_params, " parameters"));
    }
  }
  return std::unique_ptr<PsParameterStore>(
      new PsParameterStore(client, std::move(tables), num_params));
}

PsParameterStore::PsParameterStore(Client* client, std::vector<BoundTable> tables,
                                   size_t num_params)
    : client_(client),
      start_step_(client->clock()),
      tables_(std::move(tables)),
      params_(num_params, 0.0f) {
  for (const BoundTable& t : tables_) {
    pull_buffers_.push_back(
        DenseBuffer{t.spec.name(), absl::MakeSpan(params_).subspan(t.offset, t.size)});
  }
}

absl::StatusOr<absl::Span<const float>> PsParameterStore::Pull() {
  if (!pulled_) {
    RETURN_IF_ERROR(client_->PullAndWait(pull_buffers_, {}));
    pulled_ = true;
  }
  return absl::Span<const float>(params_);
}

absl::StatusOr<std::vector<ConstDenseBuffer>> PsParameterStore::PushBuffers(
    absl::Span<const float> grads) const {
  if (grads.size() != params_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("push of ", grads.size(), " gradient floats; the model has ", params_.size()));
  }
  std::vector<ConstDenseBuffer> buffers;
  buffers.reserve(tables_.size());
  for (const BoundTable& t : tables_) {
    buffers.push_back(ConstDenseBuffer{t.spec.name(), grads.subspan(t.offset, t.size)});
  }
  return buffers;
}

absl::Status PsParameterStore::PushAndClock(absl::Span<const float> grads) {
  ASSIGN_OR_RETURN(std::vector<ConstDenseBuffer> buffers, PushBuffers(grads));
  pulled_ = false;  // the pull ahead writes into params_
  absl::Status ahead;
  RETURN_IF_ERROR(client_->PushClockAndPull(std::move(buffers), {}, pull_buffers_, {}, &ahead));
  pulled_ = ahead.ok();
  if (!pulled_) LOG_WARN("{}; the next step pulls again", ahead.message());
  return absl::OkStatus();
}

}  // namespace cairn
