// One child process of cairn-launch: started with fork/exec, its stdout and
// stderr connected to pipes the launcher reads (see log_mux.h), signalled,
// and reaped.
//
// A child never outlives the launcher: it is started with
// prctl(PR_SET_PDEATHSIG, SIGKILL), so the kernel SIGKILLs it when the
// launcher dies for any reason (SIGKILL included), and the destructor
// SIGKILLs and reaps a child that still runs. The child stays in the
// launcher's process group (a Ctrl-C on the terminal reaches it too), reads
// stdin from /dev/null, and starts with no blocked signals.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so
// spawn children from the launcher's main thread only.
#ifndef CAIRN_TOOLS_LAUNCH_CHILD_PROCESS_H_
#define CAIRN_TOOLS_LAUNCH_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn::launch {

// How a child ended.
struct ExitStatus {
  int code = -1;   // exit code when it exited, else -1
  int signal = 0;  // the signal that killed it, else 0

  bool success() const { return signal == 0 && code == 0; }
  // "exit code 3" or "killed by signal 9 (Killed)".
  std::string ToString() const;
};

// Converts a waitpid() status word.
ExitStatus FromWaitStatus(int wait_status);

// Not thread-safe; confined to the launcher's main thread.
class ChildProcess {
 public:
  // Starts `binary` (a path; PATH is not searched) with `args` as argv[1..]
  // and the launcher's environment, on `cpus` only when not empty (its
  // scheduler affinity, common/spawn.h). `name` ("server 1") only labels
  // errors.
  // The pipe ends the launcher reads are non-blocking and close-on-exec.
  // Errors: NotFound / PermissionDenied naming `binary` when it cannot be
  // executed (exec's errno is reported back through a close-on-exec pipe);
  // Internal when pipes or fork fail.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(std::string name,
                                                             const std::string& binary,
                                                             const std::vector<std::string>& args,
                                                             const std::vector<int>& cpus = {});

  // SIGKILLs and reaps the child if it has not been reaped; closes the pipes.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }

  // Read ends of the child's stdout and stderr; -1 once released. The caller
  // may take them over with Release*Fd (it must then close them).
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  int ReleaseStdoutFd();
  int ReleaseStderrFd();

  // Reaps the child without blocking if it has ended; returns its status then,
  // else nullopt. Stays set once the child was reaped.
  std::optional<ExitStatus> Poll();

  // Sends `signal` unless the child was already reaped (then does nothing).
  // Internal naming the child when kill() fails.
  absl::Status Signal(int signal);

  // SIGKILLs the child if it still runs and waits for it; returns how it
  // ended (a child that had already ended keeps its own status).
  ExitStatus Kill();

 private:
  ChildProcess() = default;

  std::string name_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::optional<ExitStatus> exit_status_;  // set once reaped
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_CHILD_PROCESS_H_
