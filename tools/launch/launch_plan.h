// Where cairn-launch finds the Cairn binaries and the command lines it gives
// each process of a one-machine job. Every process listens on 127.0.0.1
// with port 0 (a free port) and reports its ports through a port file in the
// work directory; every process gets the same job file and the same --set
// overrides, so all of them run the same effective configuration.
//
// Thread-safe (pure functions), except for the file-system checks.
#ifndef CAIRN_TOOLS_LAUNCH_LAUNCH_PLAN_H_
#define CAIRN_TOOLS_LAUNCH_LAUNCH_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn::launch {

inline constexpr char kCoordinatorBinary[] = "cairn-coordinator";
inline constexpr char kServerBinary[] = "cairn-server";
inline constexpr char kWorkerBinary[] = "cairn-worker";

// What every command line is built from.
struct LaunchPlan {
  std::string job_path;                 // absolute path of the job YAML
  std::vector<std::string> overrides;   // "key.path=value", passed as --set to every process
  std::vector<std::string> worker_flags;  // extra flags appended to each worker's command line
  std::vector<std::string> daemon_flags;  // appended to every process's (--tls ...)
  std::string bin_dir;                  // where the binaries are
  std::string workdir;                  // port files and worker summaries
  int coordinator_port = 0;             // the coordinator's gRPC port; 0: a free one
};

// The directory of the running executable (/proc/self/exe). Internal when it
// cannot be resolved.
absl::StatusOr<std::string> OwnBinaryDir();

// `dir`/`name` when it is an executable regular file; else NotFound naming
// that path (and suggesting --bin-dir).
absl::StatusOr<std::string> FindBinary(const std::string& dir, const std::string& name);

// The work directory: `requested` (created if missing, made absolute), or,
// when empty, a fresh $TMPDIR/cairn-launch.XXXXXX (else under /tmp) with
// `*created_temp` set so the caller removes it at exit. Internal naming the
// directory when it cannot be created.
absl::StatusOr<std::string> PrepareWorkdir(const std::string& requested, bool* created_temp);

// Port file of the coordinator / server `index`; summary file of worker `index`.
std::string CoordinatorPortFile(const LaunchPlan& plan);
std::string ServerPortFile(const LaunchPlan& plan, int index);
std::string WorkerSummaryFile(const LaunchPlan& plan, int index);

// cairn-coordinator --config JOB --listen 127.0.0.1:PORT --port-file F
//   (PORT: plan.coordinator_port, 0 for a free one)
//   --metrics-port 0 [--set ...]
std::vector<std::string> CoordinatorArgs(const LaunchPlan& plan);

// cairn-server --config JOB --coordinator 127.0.0.1:P --listen 127.0.0.1:0
//   --port-file F --metrics-port 0 --server-id I [--set ...]
std::vector<std::string> ServerArgs(const LaunchPlan& plan, int index, int coordinator_port);

// cairn-worker --config JOB --coordinator 127.0.0.1:P --worker-id I
//   --summary S --metrics-port 0 [--set ...] [worker_flags...]
std::vector<std::string> WorkerArgs(const LaunchPlan& plan, int index, int coordinator_port);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_LAUNCH_PLAN_H_
