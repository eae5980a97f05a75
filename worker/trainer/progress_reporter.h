// cairn-worker's console progress: turns the trainer's step and epoch
// records into a ProgressBar (common/progress_bar.h) on stderr.
//
// On a terminal: a bar over all steps of the run, "epoch E/N", the epoch's
// examples/s and mean loss so far, and the ETA; at the end of each epoch the
// bar's line is finished, so the epoch's log line (test accuracy) follows on
// its own line and the next epoch starts a new bar. Elsewhere (under
// cairn-launch, in CI): logfmt lines "progress label=... step=S/T ..." every
// `log_interval`, which cairn-launch reads for its combined progress line.
//
//   examples/s: this epoch's examples / this epoch's step time so far (the
//               epoch's examples_per_second once it ends)
//   loss:       mean step loss of this epoch so far (its train_loss at the end)
//
// Not thread-safe; confined to the training thread (the trainer's on_step
// and on_epoch callbacks run there).
#ifndef CAIRN_WORKER_TRAINER_PROGRESS_REPORTER_H_
#define CAIRN_WORKER_TRAINER_PROGRESS_REPORTER_H_

#include <cstdint>
#include <cstdio>

#include "common/progress_bar.h"
#include "worker/trainer/trainer.h"

namespace cairn {

class ProgressReporter {
 public:
  // `out` (e.g. stderr) must outlive the reporter; `options` as ProgressBar's
  // (label "worker 0"; mode kAuto picks the terminal bar when `out` is one).
  // `num_epochs`: the run's epochs, shown as "epoch E/N" (fewer when
  // max_steps ends the run earlier).
  ProgressReporter(std::FILE* out, ProgressBar::Options options, int64_t num_epochs);

  // For TrainerOptions::on_step: updates the bar (drawn as its options say).
  void OnStep(const StepRecord& step);

  // Ends the bar (terminal: the line; log: a "done" line) after the last step.
  void Finish() { bar_.Finish(); }

  ProgressBar::Mode mode() const { return bar_.mode(); }

 private:
  ProgressBar bar_;
  const int64_t num_epochs_;
  int64_t epoch_ = -1;          // epoch of the sums below
  double epoch_loss_sum_ = 0;   // this epoch's step losses
  double epoch_seconds_ = 0;    // this epoch's step time
  int64_t epoch_examples_ = 0;  // this epoch's examples
  int64_t epoch_steps_ = 0;     // this epoch's steps so far
  int64_t epoch_steps_max_ = 0;  // the most steps an epoch seen so far has
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PROGRESS_REPORTER_H_
