// The training loop of cairn-worker, the same for --local and for a job
// through Cairn (the ParameterStore makes the difference):
//
//   per epoch: draw the shard's permutation (sharding.h); per step:
//     gather the batch -> Pull -> forward/backward -> [straggler sleep]
//     -> PushAndClock(grads, the next step's examples)
//   (a task may gather the next batch and read its parameters ahead with the
//   push; its next Gather and Pull then find them ready)
//   after each epoch: Pull and evaluate on the test set (forward only).
//
// Straggler simulation: with slowdown s >= 1, each step sleeps
// (s - 1) * (that step's compute time) after computing, so the worker runs
// s times slower at compute. max_steps caps the total steps (all epochs).
//
// Not thread-safe; runs on the caller's thread.
#ifndef CAIRN_WORKER_TRAINER_TRAINER_H_
#define CAIRN_WORKER_TRAINER_TRAINER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/trainer/idx_loader.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/parameter_store.h"

namespace cairn {

// Seconds spent in each phase of a step (per step, or summed).
struct PhaseSeconds {
  double data = 0;      // gathering the batch from the dataset (next to nothing when the
                        // task gathered it while the last push was in flight)
  double pull = 0;      // ParameterStore::Pull (a BSP barrier wait included)
  double compute = 0;   // forward + backward
  double slowdown = 0;  // straggler sleep
  double push = 0;      // ParameterStore::PushAndClock: the push and the iteration's end
                        // (and what a task does ahead for the next step with it)
  double total() const { return data + pull + compute + slowdown + push; }
  PhaseSeconds& operator+=(const PhaseSeconds& o);
};

struct StepRecord {
  int64_t epoch = 0;
  int64_t step = 0;         // within the epoch
  int64_t global_step = 0;  // over all epochs, from 0
  int64_t epoch_steps = 0;  // steps this epoch runs (max_steps included)
  int64_t total_steps = 0;  // steps the whole run takes (all epochs, max_steps included)
  int batch = 0;
  double loss = 0;  // mean cross-entropy of this worker's batch
  PhaseSeconds time;
};

struct EpochStats {
  int64_t epoch = 0;
  int64_t steps = 0;               // steps run in this epoch
  int64_t global_steps = 0;        // steps run so far, all epochs
  double train_loss = 0;           // mean of this epoch's step losses
  double test_loss = 0;            // mean cross-entropy (log loss) on the test set
  double test_accuracy = 0;        // fraction of test examples classified right
  double test_auc = -1;            // binary models: area under the ROC curve; else -1
  double examples_per_second = 0;  // this worker's training examples / step time
  double seconds = 0;              // step time of the epoch (evaluation excluded)
  double eval_seconds = 0;
  PhaseSeconds time;  // summed over the epoch's steps
};

struct TrainingSummary {
  std::vector<EpochStats> epochs;  // those this run trained (after a resume, the rest)
  int64_t steps = 0;               // the job's global step count at the end
  int64_t start_step = 0;          // the global step this run started at (0, or a resume's)
  int64_t examples = 0;            // this worker's training examples
  double train_loss = 0;           // last epoch's mean step loss
  double test_loss = 0;            // after the last step
  double test_accuracy = 0;        // after the last step
  double test_auc = -1;            // after the last step; -1 when the model has none
  double train_seconds = 0;        // sum of step times
  double wall_seconds = 0;         // the whole of Train, evaluation included
  double examples_per_second = 0;  // examples / train_seconds
  PhaseSeconds time;               // summed over all steps
  std::vector<double> loss_trace;  // the first trace_loss_steps step losses
};

struct TrainerOptions {
  int epochs = 1;         // >= 1
  int64_t max_steps = 0;  // 0: no cap
  int batch_size = 64;    // per worker, <= the Mlp's max_batch
  uint64_t seed = 1;      // shuffling; the same on every worker
  int worker = 0;         // this worker's index in [0, num_workers)
  int num_workers = 1;
  double slowdown = 1.0;     // >= 1
  int trace_loss_steps = 0;  // how many first step losses to keep
  // Called after every step / epoch, on the training thread (metrics, logs).
  std::function<void(const StepRecord&)> on_step;
  std::function<void(const EpochStats&)> on_epoch;
};

// One model's data, parameters and step, as RunTraining drives them. The
// phases of a step run in this order on the caller's thread; the loop times
// each, and annotates an error with the phase and the step.
class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual int64_t num_train_examples() const = 0;
  // The global step training starts at (ParameterStore::StartStep).
  virtual int64_t StartStep() const = 0;
  // Prepares the batch of these training examples (batch_size indices).
  virtual absl::Status Gather(absl::Span<const int32_t> examples) = 0;
  virtual absl::Status Pull() = 0;
  // Forward and backward on the gathered batch; the batch's mean loss.
  virtual absl::StatusOr<double> Compute() = 0;
  // Pushes the step's gradients and ends the iteration. `next`: the examples
  // of the next step when it is in this epoch (empty at an epoch's last
  // step, or the run's): a task may gather that batch and read its
  // parameters with the push; Gather(next) and Pull() then use them.
  // `after_next`: the examples of the step after that, under the same rule
  // (empty when `next` is the epoch's or the run's last): a task may start
  // gathering them while its push is in flight.
  virtual absl::Status PushAndClock(absl::Span<const int32_t> next,
                                    absl::Span<const int32_t> after_next) = 0;
  // After an epoch: pulls the parameters and fills stats' test_* fields.
  virtual absl::Status Evaluate(EpochStats* stats) = 0;
};

// The loop of the header comment over any task. InvalidArgument on bad
// options; the first phase error, annotated ("push epoch=1 step=17: ...");
// Internal when a loss is not finite.
absl::StatusOr<TrainingSummary> RunTraining(TrainingTask& task, const TrainerOptions& options);

// Trains `mlp` on `train` through `store`, evaluating on `test` after each
// epoch. Errors: InvalidArgument (bad options, data that does not fit the
// model), Internal when the loss stops being finite (naming epoch and step),
// and whatever the store or backend returns, annotated with the phase and
// step ("push epoch=1 step=17: ...").
absl::StatusOr<TrainingSummary> Train(Mlp& mlp, ParameterStore& store, const Dataset& train,
                                      const Dataset& test, const TrainerOptions& options);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_TRAINER_H_
