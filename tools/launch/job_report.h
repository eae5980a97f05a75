// The result of a job run by cairn-launch: built from the workers' JSON
// summaries (see worker/trainer/summary_json.h), printed at the end and
// written by `--summary PATH`.
//
// Launch summary fields:
//   test_accuracy        the first finished worker's test accuracy after the
//                        last step (0..1), worker 0's unless it was lost;
//                        every worker evaluates the same model
//   test_accuracy_mean   the mean over finished workers
//   train_loss           the mean over finished workers of their last epoch's
//                        mean step loss (each on its own shard)
//   examples_per_second  summed over finished workers
//   wall_seconds         from starting the coordinator until the last worker
//                        ended, measured by the launcher
//   epochs, steps        the first finished worker's counts: the epochs it
//                        trained, the job's global step count at its end
//   start_step           the global step it started at (a resume's; else 0)
//   servers, workers     process counts (workers: all started)
//   workers_lost         indices of the workers that failed while the job
//                        went on (cluster.on_worker_loss: continue); [] if none
//   config, config_hash  the job file and its hash (common/config/job_config.h)
//   metrics              [{process, url}] of every process's /metrics
//   per_worker           each finished worker's own summary, unchanged, in
//                        worker order
//
// Thread-safe (pure functions), except for the file I/O in the Read/Write
// functions.
#ifndef CAIRN_TOOLS_LAUNCH_JOB_REPORT_H_
#define CAIRN_TOOLS_LAUNCH_JOB_REPORT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace cairn::launch {

// One process's /metrics address.
struct MetricsEndpoint {
  std::string process;  // "coordinator", "server 0", "worker 1"
  std::string url;      // "http://127.0.0.1:40123/metrics"
};

// What the launcher itself knows about the run.
struct LaunchInfo {
  std::string config_path;
  std::string config_hash;
  int servers = 0;
  int workers = 0;
  double wall_seconds = 0;
  std::vector<MetricsEndpoint> metrics;
  std::vector<int> lost_workers;  // failed while the job went on
};

// Reads a worker's summary. NotFound naming the path when the file is
// missing; InvalidArgument naming the path when it is not JSON or lacks one
// of the numbers test_accuracy, train_loss, examples_per_second.
absl::StatusOr<nlohmann::json> ReadWorkerSummary(const std::string& path);

// Builds the launch summary (fields above) from the finished `workers`'
// summaries, in worker order. InvalidArgument when `workers` is empty.
absl::StatusOr<nlohmann::json> BuildLaunchSummary(const std::vector<nlohmann::json>& workers,
                                                  const LaunchInfo& info);

// The closing lines the launcher prints: accuracy, loss, throughput, time,
// then one "metrics <process>: <url>" line per process.
std::vector<std::string> FormatReport(const nlohmann::json& launch_summary);

// Writes `json` (indented, trailing newline) to `path` through a temporary
// file renamed into place. Internal naming the path on failure.
absl::Status WriteJsonFile(const std::string& path, const nlohmann::json& json);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_JOB_REPORT_H_
