#include "worker/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "worker/trainer/sharding.h"

namespace cairn {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point* start) {
  const Clock::time_point now = Clock::now();
  const double s = std::chrono::duration<double>(now - *start).count();
  *start = now;
  return s;
}

absl::Status CheckOptions(const TrainerOptions& o) {
  if (o.epochs < 1 || o.max_steps < 0 || !(o.slowdown >= 1.0) || o.trace_loss_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trainer: need epochs >= 1, max_steps >= 0, slowdown >= 1, trace_loss_steps >= 0; got ",
        o.epochs, ", ", o.max_steps, ", ", o.slowdown, ", ", o.trace_loss_steps));
  }
  return absl::OkStatus();
}

absl::Status CheckMlpData(const Mlp& mlp, const Dataset& train, const Dataset& test,
                          const TrainerOptions& o) {
  if (o.batch_size < 1 || o.batch_size > mlp.max_batch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: batch size ", o.batch_size, " outside [1, ", mlp.max_batch(), "]"));
  }
  for (const Dataset* d : {&train, &test}) {
    if (d->features != mlp.num_inputs() || d->num_classes != mlp.num_classes() ||
        d->images.size() != static_cast<size_t>(d->size * d->features) ||
        d->labels.size() != static_cast<size_t>(d->size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("trainer: ", d == &train ? "training" : "test", " data has ", d->features,
                       " features and ", d->num_classes, " classes; the model takes ",
                       mlp.num_inputs(), " inputs and ", mlp.num_classes(), " classes"));
    }
  }
  return absl::OkStatus();
}

// The MLP classifier on a Dataset through a ParameterStore.
class MlpTask final : public TrainingTask {
 public:
  MlpTask(Mlp& mlp, ParameterStore& store, const Dataset& train, const Dataset& test, int batch)
      : mlp_(mlp),
        store_(store),
        train_(train),
        test_(test),
        inputs_(static_cast<size_t>(batch * train.features)),
        labels_(static_cast<size_t>(batch)),
        grads_(mlp.num_params()) {}

  int64_t num_train_examples() const override { return train_.size; }
  int64_t StartStep() const override { return store_.StartStep(); }

  absl::Status Gather(absl::Span<const int32_t> examples) override {
    // Gathered during the last push (PushAndClock) when it was this batch.
    const bool ahead = gathered_ahead_ && std::equal(examples.begin(), examples.end(),
                                                     ahead_.begin(), ahead_.end());
    gathered_ahead_ = false;
    if (!ahead) GatherNow(examples);
    return absl::OkStatus();
  }
  absl::Status Pull() override {
    ASSIGN_OR_RETURN(params_, store_.Pull());
    return absl::OkStatus();
  }
  absl::StatusOr<double> Compute() override {
    // Into the store's memory when it has some the push reads in place:
    // then all but the first layer's weight gradient, which the push's
    // GradientWriter writes (the store may push it as it is written).
    step_grads_ = store_.GradientBuffer();
    later_ = step_grads_.size() == grads_.size();
    if (!later_) {
      step_grads_ = absl::MakeSpan(grads_);
      return mlp_.TrainStep(params_, inputs_, labels_, step_grads_);
    }
    return mlp_.TrainStepFirstWeightsLater(params_, inputs_, labels_, step_grads_);
  }
  // The store reads the next step's parameters with the push on its own
  // (PsParameterStore): they do not depend on the batch. The next batch is
  // gathered while the push is in flight, where the store waits on one:
  // the step's inputs are no longer needed (the first weight gradient,
  // which reads them, is written before `meanwhile` runs), and neither the
  // gradient nor the parameters are touched.
  absl::Status PushAndClock(absl::Span<const int32_t> next,
                            absl::Span<const int32_t> /*after_next*/) override {
    gathered_ahead_ = false;
    auto write = [&](absl::FunctionRef<void(uint64_t)> written) {
      return mlp_.WriteFirstWeights(written);
    };
    auto gather = [&] {
      if (next.empty()) return;
      GatherNow(next);
      ahead_.assign(next.begin(), next.end());
      gathered_ahead_ = true;
    };
    if (std::exchange(later_, false)) return store_.PushAndClock(step_grads_, gather, write);
    if (next.empty()) return store_.PushAndClock(step_grads_);
    return store_.PushAndClock(step_grads_, gather);
  }

  absl::Status Evaluate(EpochStats* stats) override {
    ASSIGN_OR_RETURN(absl::Span<const float> params, store_.Pull());
    ASSIGN_OR_RETURN(MlpEval eval, mlp_.Evaluate(params, test_.images, test_.labels));
    if (eval.count > 0) {
      stats->test_loss = eval.loss_sum / static_cast<double>(eval.count);
      stats->test_accuracy = static_cast<double>(eval.correct) / static_cast<double>(eval.count);
    }
    return absl::OkStatus();
  }

 private:
  void GatherNow(absl::Span<const int32_t> examples) {
    const int64_t features = train_.features;
    for (size_t j = 0; j < examples.size(); ++j) {
      std::memcpy(inputs_.data() + j * features, train_.images.data() + examples[j] * features,
                  features * sizeof(float));
      labels_[j] = train_.labels[examples[j]];
    }
  }

  Mlp& mlp_;
  ParameterStore& store_;
  const Dataset& train_;
  const Dataset& test_;
  std::vector<float> inputs_;  // host work buffers, sized once
  std::vector<int32_t> labels_;
  std::vector<float> grads_;
  absl::Span<float> step_grads_;  // this step's gradient: grads_ or the store's buffer
  std::vector<int32_t> ahead_;    // the examples inputs_ and labels_ hold when gathered_ahead_
  bool gathered_ahead_ = false;
  bool later_ = false;  // Compute left the first weight gradient to the push
  absl::Span<const float> params_;
};

}  // namespace

PhaseSeconds& PhaseSeconds::operator+=(const PhaseSeconds& o) {
  data += o.data;
  pull += o.pull;
  compute += o.compute;
  slowdown += o.slowdown;
  push += o.push;
  return *this;
}

absl::StatusOr<TrainingSummary> Train(Mlp& mlp, ParameterStore& store, const Dataset& train,
                                      const Dataset& test, const TrainerOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  RETURN_IF_ERROR(CheckMlpData(mlp, train, test, options));
  MlpTask task(mlp, store, train, test, options.batch_size);
  return RunTraining(task, options);
}

absl::StatusOr<TrainingSummary> RunTraining(TrainingTask& task, const TrainerOptions& options) {
  const Clock::time_point train_start = Clock::now();
  RETURN_IF_ERROR(CheckOptions(options));
  ASSIGN_OR_RETURN(DataShard shard,
                   DataShard::Create(task.num_train_examples(), options.worker,
                                     options.num_workers, options.batch_size, options.seed));
  const int batch = options.batch_size;

  const int64_t per_epoch = shard.steps_per_epoch();
  int64_t total_steps = per_epoch * options.epochs;
  if (options.max_steps > 0) total_steps = std::min(total_steps, options.max_steps);

  TrainingSummary summary;
  // A resumed job starts at its checkpoint's step, on the batch a run from
  // step 0 would have drawn there (the permutation depends on the epoch only).
  const int64_t start_step = std::min(task.StartStep(), total_steps);
  if (start_step > 0) {
    // Epochs counted from 1 in the log, as in the progress lines.
    LOG_INFO("resuming at global step {} (epoch {}/{}, step {}) of {}", start_step,
             start_step / per_epoch + 1, options.epochs, start_step % per_epoch, total_steps);
  }
  summary.steps = start_step;
  summary.start_step = start_step;
  std::vector<int32_t> next_examples;
  for (int64_t epoch = start_step / per_epoch; epoch < options.epochs; ++epoch) {
    if (options.max_steps > 0 && summary.steps >= options.max_steps) break;
    shard.StartEpoch(epoch);
    EpochStats stats;
    stats.epoch = epoch;
    double loss_sum = 0;
    const int64_t first_step = epoch == start_step / per_epoch ? start_step % per_epoch : 0;
    for (int64_t step = first_step; step < shard.steps_per_epoch(); ++step) {
      if (options.max_steps > 0 && summary.steps >= options.max_steps) break;
      const int64_t epoch_steps = std::min(per_epoch, total_steps - epoch * per_epoch);
      StepRecord rec{epoch, step, summary.steps, epoch_steps, total_steps, batch, 0, {}};
      auto where = [&] { return absl::StrCat(" epoch=", epoch, " step=", step); };
      Clock::time_point t = Clock::now();

      absl::Status gathered = task.Gather(shard.Batch(step));
      if (!gathered.ok()) return Annotate(gathered, absl::StrCat("data", where()));
      rec.time.data = SecondsSince(&t);

      absl::Status pulled = task.Pull();
      if (!pulled.ok()) return Annotate(pulled, absl::StrCat("pull", where()));
      rec.time.pull = SecondsSince(&t);

      absl::StatusOr<double> loss = task.Compute();
      if (!loss.ok()) return Annotate(loss.status(), absl::StrCat("compute", where()));
      if (!std::isfinite(*loss)) {
        return absl::InternalError(absl::StrCat("training diverged: loss is ", *loss, " at",
                                                where(), " (learning rate too high?)"));
      }
      rec.loss = *loss;
      rec.time.compute = SecondsSince(&t);
      if (options.slowdown > 1.0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double>((options.slowdown - 1.0) * rec.time.compute));
        rec.time.slowdown = SecondsSince(&t);
      }

      // Whether step + k is past this epoch or the run.
      auto beyond = [&](int64_t k) {
        return step + k >= shard.steps_per_epoch() ||
               (options.max_steps > 0 && summary.steps + k >= options.max_steps);
      };
      // Batch() answers in one buffer: the next step's examples are copied
      // out before the step after's are drawn.
      next_examples.clear();
      if (!beyond(1)) {
        const absl::Span<const int32_t> next = shard.Batch(step + 1);
        next_examples.assign(next.begin(), next.end());
      }
      absl::Status pushed = task.PushAndClock(
          next_examples, beyond(2) ? absl::Span<const int32_t>() : shard.Batch(step + 2));
      if (!pushed.ok()) return Annotate(pushed, absl::StrCat("push", where()));
      rec.time.push = SecondsSince(&t);

      loss_sum += rec.loss;
      ++stats.steps;
      ++summary.steps;
      stats.time += rec.time;
      if (static_cast<int64_t>(summary.loss_trace.size()) < options.trace_loss_steps) {
        summary.loss_trace.push_back(rec.loss);
      }
      if (options.on_step) options.on_step(rec);
    }
    if (stats.steps == 0) break;
    stats.global_steps = summary.steps;
    stats.train_loss = loss_sum / static_cast<double>(stats.steps);
    stats.seconds = stats.time.total();
    stats.examples_per_second = static_cast<double>(stats.steps * batch) / stats.seconds;
    Clock::time_point eval_start = Clock::now();
    RETURN_IF_ERROR(Annotate(task.Evaluate(&stats), absl::StrCat("evaluate epoch=", epoch)));
    stats.eval_seconds = SecondsSince(&eval_start);
    LOG_INFO(
        "epoch {}/{} steps {} (total {}) train_loss {:.4f} test_loss {:.4f} test_accuracy {:.4f}{} "
        "examples/s {:.0f} | per step ms: data {:.3f} pull {:.3f} compute {:.3f} slowdown {:.3f} "
        "push {:.3f} | eval {:.2f}s",
        epoch + 1, options.epochs, stats.steps, stats.global_steps, stats.train_loss,
        stats.test_loss, stats.test_accuracy,
        stats.test_auc >= 0 ? absl::StrFormat(" test_auc %.4f", stats.test_auc) : "",
        stats.examples_per_second, 1e3 * stats.time.data / stats.steps,
        1e3 * stats.time.pull / stats.steps, 1e3 * stats.time.compute / stats.steps,
        1e3 * stats.time.slowdown / stats.steps, 1e3 * stats.time.push / stats.steps,
        stats.eval_seconds);
    summary.time += stats.time;
    summary.examples += stats.steps * batch;
    summary.train_loss = stats.train_loss;
    summary.test_loss = stats.test_loss;
    summary.test_accuracy = stats.test_accuracy;
    summary.test_auc = stats.test_auc;
    summary.epochs.push_back(stats);
    if (options.on_epoch) options.on_epoch(stats);
  }
  summary.train_seconds = summary.time.total();
  if (summary.train_seconds > 0) {
    summary.examples_per_second = static_cast<double>(summary.examples) / summary.train_seconds;
  }
  summary.wall_seconds = std::chrono::duration<double>(Clock::now() - train_start).count();
  return summary;
}

}  // namespace cairn
