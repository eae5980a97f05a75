// The JSON summary `cairn-worker --summary PATH` writes after training.
//
// Fields (seconds unless named otherwise):
//   mode ("local" | "ps"), device, cpus (the CPUs the worker may run on,
//   as a cpulist: "0-3,8"), worker, workers, batch_size,
//   test_accuracy (0..1), test_loss, train_loss (last epoch's mean),
//   test_auc (binary models only: the ctr model),
//   examples_per_second (this worker's examples / step time), examples,
//   wall_seconds (training and evaluation), train_seconds, epochs (count
//   run), steps, loss_trace (first --trace-loss step losses),
//   time_split {data, pull, compute, slowdown, push} (totals), and
//   per_epoch [{epoch, steps, train_loss, test_loss, test_accuracy, [test_auc,]
//   examples_per_second, seconds, eval_seconds, time_split}].
#ifndef CAIRN_WORKER_TRAINER_SUMMARY_JSON_H_
#define CAIRN_WORKER_TRAINER_SUMMARY_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "worker/trainer/trainer.h"

namespace cairn {

struct RunInfo {
  std::string mode;    // "local" or "ps"
  std::string device;  // Backend::Describe()
  int worker = 0;
  int workers = 1;
  int batch_size = 0;
  std::string cpus;  // common/cpu_affinity.h FormatCpuList(AllowedCpus())
};

nlohmann::json SummaryToJson(const TrainingSummary& summary, const RunInfo& run);

// Writes the summary to `path` (replacing it). InvalidArgument naming the
// path when it cannot be written.
absl::Status WriteSummaryJson(const std::string& path, const TrainingSummary& summary,
                              const RunInfo& run);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_SUMMARY_JSON_H_
