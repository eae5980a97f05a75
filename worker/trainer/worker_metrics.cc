#include "worker/trainer/worker_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "common/metrics.h"

namespace cairn {

WorkerMetrics::WorkerMetrics(prometheus::Registry& registry) {
  steps_ = &prometheus::BuildCounter()
                .Name("cairn_worker_steps_total")
                .Help("Training steps this worker completed")
                .Register(registry)
                .Add({});
  examples_ = &prometheus::BuildCounter()
                   .Name("cairn_worker_examples_total")
                   .Help("Training examples this worker processed")
                   .Register(registry)
                   .Add({});
  auto& phases = prometheus::BuildHistogram()
                     .Name("cairn_worker_step_phase_seconds")
                     .Help("Time of each phase of a training step")
                     .Register(registry);
  const char* names[] = {"data", "pull", "compute", "slowdown", "push"};
  for (size_t i = 0; i < phase_.size(); ++i) {
    phase_[i] = &phases.Add({{"phase", names[i]}}, LatencyBuckets());
  }
  train_loss_ = &prometheus::BuildGauge()
                     .Name("cairn_worker_train_loss")
                     .Help("Mean cross-entropy of the last training batch")
                     .Register(registry)
                     .Add({});
  test_accuracy_ = &prometheus::BuildGauge()
                        .Name("cairn_worker_test_accuracy")
                        .Help("Test-set accuracy (0..1) after the last completed epoch")
                        .Register(registry)
                        .Add({});
  test_auc_ = &prometheus::BuildGauge()
                   .Name("cairn_worker_test_auc")
                   .Help("Test-set ROC AUC after the last completed epoch (binary models: ctr)")
                   .Register(registry)
                   .Add({});
  epoch_ = &prometheus::BuildGauge()
                .Name("cairn_worker_epoch")
                .Help("Epochs this worker completed")
                .Register(registry)
                .Add({});
}

void WorkerMetrics::RecordStep(const StepRecord& step) {
  steps_->Increment();
  examples_->Increment(step.batch);
  const double seconds[] = {step.time.data, step.time.pull, step.time.compute,
                            step.time.slowdown, step.time.push};
  for (size_t i = 0; i < phase_.size(); ++i) phase_[i]->Observe(seconds[i]);
  train_loss_->Set(step.loss);
}

void WorkerMetrics::RecordEpoch(const EpochStats& epoch) {
  test_accuracy_->Set(epoch.test_accuracy);
  if (epoch.test_auc >= 0) test_auc_->Set(epoch.test_auc);
  epoch_->Set(static_cast<double>(epoch.epoch + 1));
}

}  // namespace cairn
