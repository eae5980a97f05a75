// The worker's Prometheus metrics (names per docs/metrics.md):
//
//   cairn_worker_steps_total                   counter: training steps done
//   cairn_worker_examples_total                counter: training examples seen
//   cairn_worker_step_phase_seconds{phase}     histogram: time of each step
//       phase, phase in data|pull|compute|slowdown|push
//   cairn_worker_train_loss                    gauge: last step's mean loss
//   cairn_worker_test_accuracy                 gauge: after the last epoch (0..1)
//   cairn_worker_epoch                         gauge: epochs completed
//
// Thread-safe (prometheus-cpp metrics are). The registry must outlive this.
#ifndef CAIRN_WORKER_TRAINER_WORKER_METRICS_H_
#define CAIRN_WORKER_TRAINER_WORKER_METRICS_H_

#include <array>

#include "worker/trainer/trainer.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace cairn {

class WorkerMetrics {
 public:
  explicit WorkerMetrics(prometheus::Registry& registry);

  void RecordStep(const StepRecord& step);
  void RecordEpoch(const EpochStats& epoch);

 private:
  prometheus::Counter* steps_;
  prometheus::Counter* examples_;
  // data, pull, compute, slowdown, push
  std::array<prometheus::Histogram*, 5> phase_;
  prometheus::Gauge* train_loss_;
  prometheus::Gauge* test_accuracy_;
  prometheus::Gauge* test_auc_;
  prometheus::Gauge* epoch_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_WORKER_METRICS_H_
