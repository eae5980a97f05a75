#include "tools/launch/launch_steps.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/daemon.h"

namespace cairn::launch {

int BadInput(absl::string_view message) {
  std::fprintf(stderr, "cairn-launch: %s\n",
               absl::StrReplaceAll(message, {{"\n", "\n  "}}).c_str());
  return kExitBadConfig;
}

TempDirGuard::~TempDirGuard() {
  std::error_code ignored;  // best effort: leftovers in $TMPDIR are harmless
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

int Abort(Supervisor& supervisor, const Event& event, absl::string_view waiting_for) {
  supervisor.ClearStatus();
  switch (event.kind) {
    case Event::Kind::kSignal:
      supervisor.Log(absl::StrCat("received ", strsignal(event.signal), "; stopping the job"));
      break;
    case Event::Kind::kFailed:
      supervisor.Log(absl::StrCat(event.failed, " failed (", event.status.ToString(),
                                  "); stopping the job"));
      break;
    case Event::Kind::kTimeout:
      supervisor.Log(absl::StrCat("timed out waiting for ", waiting_for,
                                  " (cluster.startup_timeout); stopping the job"));
      break;
    case Event::Kind::kReady:
      break;
  }
  const std::vector<std::string> killed = supervisor.StopAll(kStopGrace);
  for (const std::string& name : killed) supervisor.Log(absl::StrCat(name, " needed SIGKILL"));
  switch (event.kind) {
    case Event::Kind::kSignal:
      return 128 + event.signal;
    case Event::Kind::kFailed:
      supervisor.Log(absl::StrCat("job failed: ", event.failed, " ended with ",
                                  event.status.ToString()));
      return kExitFailure;
    case Event::Kind::kTimeout:
      supervisor.Log(absl::StrCat("job failed: timed out waiting for ", waiting_for));
      return kExitUnreachable;
    case Event::Kind::kReady:
      break;
  }
  return kExitFailure;
}

int Fail(Supervisor& supervisor, absl::string_view message) {
  supervisor.ClearStatus();
  supervisor.Log(absl::StrCat("job failed: ", message));
  supervisor.StopAll(kStopGrace);
  return kExitFailure;
}

std::function<bool()> PortFileReady(std::string path, std::optional<DaemonPorts>* ports,
                                    absl::Status* error) {
  return [path = std::move(path), ports, error] {
    if (ports->has_value()) return true;
    absl::StatusOr<std::optional<DaemonPorts>> read = ReadPortFile(path);
    if (!read.ok()) {
      *error = read.status();
      return true;
    }
    *ports = *read;
    return ports->has_value();
  };
}

}  // namespace cairn::launch
