#include "worker/trainer/progress_reporter.h"

#include <algorithm>
#include <utility>

namespace cairn {

ProgressReporter::ProgressReporter(std::FILE* out, ProgressBar::Options options,
                                   int64_t num_epochs)
    : bar_(out, std::move(options)), num_epochs_(num_epochs) {}

void ProgressReporter::OnStep(const StepRecord& step) {
  if (step.epoch != epoch_) {
    epoch_ = step.epoch;
    epoch_loss_sum_ = 0;
    epoch_seconds_ = 0;
    epoch_examples_ = 0;
    epoch_steps_ = 0;
  }
  epoch_loss_sum_ += step.loss;
  epoch_seconds_ += step.time.total();
  epoch_examples_ += step.batch;
  ++epoch_steps_;

  // Epochs the run really has: max_steps may end it early. An epoch's
  // steps are the full count in every epoch but a cut-short last one.
  epoch_steps_max_ = std::max(epoch_steps_max_, step.epoch_steps);
  ProgressFields fields;
  fields.epoch = step.epoch;
  fields.num_epochs = num_epochs_;
  if (epoch_steps_max_ > 0) {
    fields.num_epochs = std::min(
        num_epochs_, (step.total_steps + epoch_steps_max_ - 1) / epoch_steps_max_);
  }
  fields.loss = epoch_loss_sum_ / static_cast<double>(epoch_steps_);
  if (epoch_seconds_ > 0) {
    fields.examples_per_second = static_cast<double>(epoch_examples_) / epoch_seconds_;
  }
  bar_.Update(step.global_step + 1, step.total_steps, fields);
  // The epoch's evaluation and its log line come next: end the bar's line
  // first, so the log line does not land on it.
  if (bar_.mode() == ProgressBar::Mode::kTerminal && step.step + 1 >= step.epoch_steps) {
    bar_.Finish();
  }
}

}  // namespace cairn
