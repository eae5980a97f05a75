// `cairn-launch --prometheus`: runs Debian's Prometheus server beside the
// job, against the job's file_sd targets (targets_file.h), until the job
// stops. It listens on a free loopback port, keeps its TSDB in the work
// directory, and logs only warnings and errors (prefixed "[prometheus] ").
// It is a member of the job's Supervisor, so it is stopped with the job and
// dies with the launcher (PR_SET_PDEATHSIG); its ending while the job runs
// is logged and does not stop the job (supervisor.h).
#ifndef CAIRN_TOOLS_LAUNCH_PROMETHEUS_SIDECAR_H_
#define CAIRN_TOOLS_LAUNCH_PROMETHEUS_SIDECAR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/targets_file.h"

namespace cairn::launch {

// Where Debian's package prometheus installs the server.
inline constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";

// OK when `binary` is an executable file; else FailedPrecondition naming it
// and the Debian package that provides it.
absl::Status CheckPrometheusInstalled(const std::string& binary);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then
// released). Internal on socket errors.
absl::StatusOr<int> FreeLoopbackPort();

// --config.file, --storage.tsdb.path, --web.listen-address=127.0.0.1:PORT
// and --log.level=warn for `files`.
std::vector<std::string> PrometheusArgs(const PrometheusFiles& files, int port);

// True when http://127.0.0.1:`port`/-/ready answers 200 within `timeout`.
bool PrometheusReady(int port, absl::Duration timeout = absl::Milliseconds(500));

// The outcome of StartPrometheus.
struct PrometheusStart {
  Event event;      // kReady once it answers /-/ready; see StartPrometheus
  std::string url;  // "http://127.0.0.1:PORT/" (set from the start)
};

// Starts `binary` as `supervisor`'s "prometheus" member and forwards the
// job's output until Prometheus is ready, a termination signal arrives, or
// `deadline` passes. The event is kReady, kSignal, kTimeout, or kFailed
// (failed = "prometheus", with its exit status) when it ended before it was
// ready. Errors: Internal (no free port), and ChildProcess::Spawn's, naming
// the binary.
absl::StatusOr<PrometheusStart> StartPrometheus(Supervisor& supervisor, const std::string& binary,
                                                const PrometheusFiles& files, absl::Time deadline);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_PROMETHEUS_SIDECAR_H_
