// The launcher's ways out and its wait for a port file, shared by the
// phases of launch_main.cc: every path that ends the job stops every
// process first and returns the launcher's exit code (common/daemon.h:
// 0 done, 1 a process failed, 2 bad input, 4 start-up timeout, 128+N a
// signal).
//
// Not thread-safe; confined to the launcher's main thread.
#ifndef CAIRN_TOOLS_LAUNCH_LAUNCH_STEPS_H_
#define CAIRN_TOOLS_LAUNCH_LAUNCH_STEPS_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/launch/port_file.h"
#include "tools/launch/supervisor.h"

namespace cairn::launch {

// How long processes get between SIGTERM and SIGKILL when the job stops.
inline constexpr absl::Duration kStopGrace = absl::Seconds(5);

// Prints "cairn-launch: <message>" (continuation lines indented) to stderr
// and returns kExitBadConfig. For errors before any process started.
int BadInput(absl::string_view message);

// Stops every process after `event` (anything but kReady) ended a phase,
// logs why, and returns the exit code. `waiting_for` names what the phase
// waited for ("the workers").
int Abort(Supervisor& supervisor, const Event& event, absl::string_view waiting_for);

// Logs "job failed: <message>", stops every process, returns kExitFailure.
int Fail(Supervisor& supervisor, absl::string_view message);

// A ready predicate for Supervisor::RunUntil that reads the port file at
// `path` each time; `*ports` is set once it is read. A malformed file counts
// as ready with `*error` set.
std::function<bool()> PortFileReady(std::string path, std::optional<DaemonPorts>* ports,
                                    absl::Status* error);

// Removes a work directory the launcher created itself, whatever the exit.
class TempDirGuard {
 public:
  explicit TempDirGuard(std::string dir) : dir_(std::move(dir)) {}
  ~TempDirGuard();

  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;

 private:
  std::string dir_;
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_LAUNCH_STEPS_H_
