#include "worker/trainer/ps_trainer.h"

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/types.pb.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<PsParameterStore>> PsParameterStore::Create(
    Client* client, std::vector<BoundTable> tables, size_t num_params, bool in_shared_memory) {
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
      new PsParameterStore(client, std::move(tables), num_params, in_shared_memory));
}

PsParameterStore::PsParameterStore(Client* client, std::vector<BoundTable> tables,
                                   size_t num_params, bool in_shared_memory)
    : client_(client),
      start_step_(client->clock()),
      tables_(std::move(tables)),
      lend_(in_shared_memory),
      own_params_(num_params, 0.0f),
      params_(absl::MakeSpan(own_params_)) {
  ViewParams();
  TryLend();
}

void PsParameterStore::ViewParams() {
  pull_buffers_.clear();
  for (const BoundTable& t : tables_) {
    pull_buffers_.push_back(DenseBuffer{t.spec.name(), params_.subspan(t.offset, t.size)});
  }
}

void PsParameterStore::TryLend() {
  if (!lend_ || lent_params_ != nullptr || params_.empty()) return;
  if (++lend_tries_ > kLendTries) {
    lend_ = false;
    LOG_INFO("values stay in this worker's own memory: the client lent no shared memory");
    return;
  }
  const size_t bytes = params_.size() * sizeof(float);
  std::unique_ptr<SharedBuffer> params = client_->LendSharedBuffer(bytes);
  if (params == nullptr) return;
  // The gradient, then (8-byte aligned) a streamed push's count.
  const size_t count_at = (bytes + alignof(uint64_t) - 1) / alignof(uint64_t) * alignof(uint64_t);
  std::unique_ptr<SharedBuffer> grads = client_->LendSharedBuffer(count_at + sizeof(uint64_t));
  if (grads == nullptr) return;  // `params` goes back
  float* values = reinterpret_cast<float*>(params->bytes().data());
  std::copy(params_.begin(), params_.end(), values);  // what was pulled stays
  params_ = absl::MakeSpan(values, params_.size());
  grads_ = absl::MakeSpan(reinterpret_cast<float*>(grads->bytes().data()), params_.size());
  written_ = new (grads->bytes().data() + count_at) std::atomic<uint64_t>(0);
  lent_params_ = std::move(params);
  lent_grads_ = std::move(grads);
  std::vector<float>().swap(own_params_);  // back only after a spoiled call
  ViewParams();
  LOG_INFO("values and gradients in {} bytes of shared memory each: pushes and pulls are read "
           "and written there in place", bytes);
}

bool PsParameterStore::DropSpoiled() {
  if (lent_params_ == nullptr || (!lent_params_->spoiled() && !lent_grads_->spoiled())) {
    return false;
  }
  LOG_WARN("a call that used this worker's lent shared memory failed: values go back to its own "
           "memory and are pulled again");
  own_params_.assign(params_.size(), 0.0f);
  params_ = absl::MakeSpan(own_params_);
  grads_ = {};
  written_ = nullptr;
  lent_params_.reset();  // kept from reuse by the client: the server may still write it
  lent_grads_.reset();
  lend_ = false;
  pulled_ = false;
  ViewParams();
  return true;
}

absl::StatusOr<absl::Span<const float>> PsParameterStore::Pull() {
  TryLend();
  if (!pulled_) {
    absl::Status pulled = client_->PullAndWait(pull_buffers_, {});
    // A pull into lent memory that timed out is not retried by the client
    // (the server may still write there late): read again into own memory,
    // where it is.
    if (!pulled.ok() && DropSpoiled()) pulled = client_->PullAndWait(pull_buffers_, {});
    if (!pulled.ok()) return pulled;
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

absl::Status PsParameterStore::PushAndClock(absl::Span<const float> grads,
                                            absl::FunctionRef<void()> meanwhile) {
  return PushAndClock(grads, meanwhile,
                      [](absl::FunctionRef<void(uint64_t)>) { return absl::OkStatus(); });
}

absl::Status PsParameterStore::PushAndClock(absl::Span<const float> grads,
                                            absl::FunctionRef<void()> meanwhile,
                                            GradientWriter write) {
  absl::StatusOr<std::vector<ConstDenseBuffer>> buffers = PushBuffers(grads);
  // Streamed only from the lent buffer, the tables in its order up to its
  // end (the count is of bytes back from there).
  const bool lent = written_ != nullptr && grads.data() == grads_.data() && !tables_.empty() &&
                    tables_.back().offset + tables_.back().size == grads.size();
  if (!buffers.ok() || !lent) {
    RETURN_IF_ERROR(write([](uint64_t) {}));
    if (!buffers.ok()) return buffers.status();
  }
  pulled_ = false;  // the pull ahead writes into params_
  absl::Status ahead;
  absl::Status pushed;
  absl::Status wrote;
  if (lent) {
    std::atomic<uint64_t>* count = written_;
    pushed = client_->PushClockAndPull(
        *std::move(buffers), pull_buffers_, &ahead, meanwhile,
        Client::GradientStream{count, [&] {
                                 wrote = write([count](uint64_t bytes) {
                                   count->store(bytes, std::memory_order_release);
                                 });
                                 // Not all written: the server gives the push up.
                                 if (wrote.ok()) {
                                   count->store(Client::kAllWritten, std::memory_order_release);
                                 }
                               }});
    if (!wrote.ok()) {
      DropSpoiled();
      return wrote;
    }
  } else {
    pushed = client_->PushClockAndPull(*std::move(buffers), {}, pull_buffers_, {}, &ahead,
                                       meanwhile);
  }
  if (!pushed.ok()) {
    DropSpoiled();
    return pushed;
  }
  pulled_ = ahead.ok();
  if (!pulled_) LOG_WARN("{}; the next step pulls again", ahead.message());
  DropSpoiled();
  return absl::OkStatus();
}

}  // namespace cairn
