#include "worker/trainer/ctr_trainer.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/ctr_batch_ahead.h"

namespace cairn {
namespace {

class CtrTask final : public TrainingTask {
 public:
  CtrTask(CtrModel& model, CtrParameterStore& store, const CriteoData& train,
          const CriteoData& test, int num_workers)
      : model_(model),
        store_(store),
        train_(train),
        test_(test),
        row_scale_(1.0f / static_cast<float>(num_workers)),
        head_grads_(model.head().num_params()),
        batch_ahead_(store.WaitsOnServers() ? std::make_unique<CtrBatchAhead>(train) : nullptr) {}

  int64_t num_train_examples() const override { return train_.size; }
  int64_t StartStep() const override { return store_.StartStep(); }

  absl::Status Gather(absl::Span<const int32_t> examples) override {
    const bool gathered = next_gathered_ && std::equal(examples.begin(), examples.end(),
                                                       next_examples_.begin(), next_examples_.end());
    read_ahead_ = gathered && ahead_.has_value();
    if (gathered) {
      std::swap(batch_, next_batch_);
    } else {
      GatherCtrBatch(train_, examples, &batch_);
    }
    if (read_ahead_) {
      std::swap(rows_, next_rows_);
      head_ = *ahead_;
    }
    next_gathered_ = false;
    ahead_.reset();
    return absl::OkStatus();
  }
  absl::Status Pull() override {
    if (read_ahead_) return absl::OkStatus();
    ASSIGN_OR_RETURN(head_, store_.Pull(batch_.keys, &rows_));
    return absl::OkStatus();
  }
  absl::StatusOr<double> Compute() override {
    return model_.TrainStep(batch_, head_, rows_, absl::MakeSpan(head_grads_), &row_grads_,
                            row_scale_);
  }
  // With the next step's examples: that batch is gathered now (or was,
  // while the last push was in flight) and its rows read with the push
  // (CtrParameterStore::PushClockAndPull). With a store on servers, the
  // batch after it is gathered on batch_ahead_'s thread while this push is
  // in flight.
  absl::Status PushAndClock(absl::Span<const int32_t> next,
                            absl::Span<const int32_t> after_next) override {
    ahead_.reset();
    next_gathered_ = false;
    if (next.empty()) return store_.PushAndClock(head_grads_, batch_.keys, row_grads_);
    if (batch_ahead_ == nullptr || !batch_ahead_->Take(next, &next_batch_)) {
      GatherCtrBatch(train_, next, &next_batch_);
    }
    if (batch_ahead_ != nullptr && !after_next.empty()) batch_ahead_->Start(after_next);
    next_examples_.assign(next.begin(), next.end());
    next_gathered_ = true;
    ASSIGN_OR_RETURN(ahead_, store_.PushClockAndPull(head_grads_, batch_.keys, row_grads_,
                                                     next_batch_.keys, &next_rows_));
    return absl::OkStatus();
  }

  absl::Status Evaluate(EpochStats* stats) override {
    const int64_t n = test_.size;
    std::vector<float> probs(static_cast<size_t>(n));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    std::vector<int32_t> examples;
    CtrBatch chunk;
    FieldRows rows;
    for (int64_t first = 0; first < n; first += model_.max_batch()) {
      const int64_t m = std::min<int64_t>(model_.max_batch(), n - first);
      examples.resize(static_cast<size_t>(m));
      std::iota(examples.begin(), examples.end(), static_cast<int32_t>(first));
      GatherCtrBatch(test_, examples, &chunk);
      ASSIGN_OR_RETURN(absl::Span<const float> head, store_.Pull(chunk.keys, &rows));
      RETURN_IF_ERROR(model_.Predict(chunk, head, rows, absl::MakeSpan(probs).subspan(first, m)));
      std::copy(chunk.labels.begin(), chunk.labels.end(), labels.begin() + first);
    }
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      // Clamped as scikit-learn's log_loss clips: a probability of exactly
      // 0 or 1 (float rounding of a large logit) costs log(1e-7), not inf.
      const double p = std::clamp(static_cast<double>(probs[i]), 1e-7, 1 - 1e-7);
      loss -= labels[i] == 1 ? std::log(p) : std::log1p(-p);
      correct += (probs[i] > 0.5f) == (labels[i] == 1);
    }
    stats->test_loss = loss / static_cast<double>(n);
    stats->test_accuracy = static_cast<double>(correct) / static_cast<double>(n);
    stats->test_auc = RocAuc(probs, labels);
    return absl::OkStatus();
  }

 private:
  CtrModel& model_;
  CtrParameterStore& store_;
  const CriteoData& train_;
  const CriteoData& test_;
  const float row_scale_;
  CtrBatch batch_;
  FieldRows rows_;
  FieldRows row_grads_;
  std::vector<float> head_grads_;
  absl::Span<const float> head_;
  // The next step, gathered before the push (next_gathered_) and read with
  // it: its examples, batch and rows, and the head's view (nullopt: not
  // read ahead; the batch is used all the same).
  std::vector<int32_t> next_examples_;
  bool next_gathered_ = false;
  CtrBatch next_batch_;
  FieldRows next_rows_;
  std::optional<absl::Span<const float>> ahead_;
  bool read_ahead_ = false;  // this step's batch and rows came ahead
  // With a store on servers: the batch after next, gathered on a thread of
  // its own during the push (null otherwise).
  std::unique_ptr<CtrBatchAhead> batch_ahead_;
};

}  // namespace

absl::StatusOr<TrainingSummary> TrainCtr(CtrModel& model, CtrParameterStore& store,
                                         const CriteoData& train, const CriteoData& test,
                                         const TrainerOptions& options) {
  if (options.batch_size < 1 || options.batch_size > model.max_batch()) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: batch size ", options.batch_size,
                                                   " outside [1, ", model.max_batch(), "]"));
  }
  if (train.size < 1 || test.size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: ", train.size, " training and ",
                                                   test.size,
                                                   " test examples; the ctr model needs both"));
  }
  if (options.num_workers < 1) {
    return absl::InvalidArgumentError("trainer: num_workers must be >= 1");
  }
  CtrTask task(model, store, train, test, options.num_workers);
  return RunTraining(task, options);
}

}  // namespace cairn
