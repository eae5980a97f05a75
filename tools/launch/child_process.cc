#include "tools/launch/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/spawn.h"

namespace cairn::launch {
namespace {

void CloseIfOpen(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal != 0) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", code);
}

ExitStatus FromWaitStatus(int wait_status) {
  ExitStatus out;
  if (WIFEXITED(wait_status)) out.code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) out.signal = WTERMSIG(wait_status);
  return out;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    std::string name, const std::string& binary, const std::vector<std::string>& args,
    const std::vector<int>& cpus) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]}) CloseIfOpen(fd);
  };
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close_all();
    return absl::InternalError(
        absl::StrCat("cannot create pipes for ", name, ": ", std::strerror(error)));
  }
  absl::StatusOr<pid_t> pid = SpawnChild(binary, args, {-1, out_pipe[1], err_pipe[1]}, cpus);
  if (!pid.ok()) {
    close_all();
    return absl::Status(pid.status().code(),
                        absl::StrCat(pid.status().message(), " for ", name));
  }

  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->name_ = std::move(name);
  child->pid_ = *pid;
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_pipe[0];
  out_pipe[0] = err_pipe[0] = -1;  // owned by the child object now
  close_all();
  for (int fd : {child->stdout_fd_, child->stderr_fd_}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) Kill();
  CloseIfOpen(&stdout_fd_);
  CloseIfOpen(&stderr_fd_);
}

int ChildProcess::ReleaseStdoutFd() {
  const int fd = stdout_fd_;
  stdout_fd_ = -1;
  return fd;
}

int ChildProcess::ReleaseStderrFd() {
  const int fd = stderr_fd_;
  stderr_fd_ = -1;
  return fd;
}

std::optional<ExitStatus> ChildProcess::Poll() {
  if (exit_status_.has_value()) return exit_status_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) exit_status_ = FromWaitStatus(status);
  return exit_status_;
}

absl::Status ChildProcess::Signal(int signal) {
  if (Poll().has_value()) return absl::OkStatus();
  if (::kill(pid_, signal) != 0) {
    return absl::InternalError(absl::StrCat("cannot send signal ", signal, " to ", name_,
                                            " (pid ", pid_, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

ExitStatus ChildProcess::Kill() {
  if (!Poll().has_value()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    exit_status_ = r == pid_ ? FromWaitStatus(status) : ExitStatus{-1, SIGKILL};
  }
  return *exit_status_;
}

}  // namespace cairn::launch
