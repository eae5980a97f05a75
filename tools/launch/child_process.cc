#include "tools/launch/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cairn::launch {
namespace {

absl::Status ErrnoError(int error, const std::string& what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

void CloseIfOpen(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// Runs in the forked child: only async-signal-safe calls from here on.
[[noreturn]] void ExecChild(pid_t launcher, int null_fd, int out_fd, int err_fd, int report_fd,
                            const char* binary, char* const* argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl took effect
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(binary, argv);
  const int error = errno;
  [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &error, sizeof(error));
  ::_exit(127);
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
    std::string name, const std::string& binary, const std::vector<std::string>& args) {
  // argv is built before fork: the child may not allocate.
  std::vector<std::string> storage;
  storage.push_back(binary);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int report_pipe[2] = {-1, -1};  // the child writes exec's errno here
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &report_pipe[0],
                    &report_pipe[1], &null_fd}) {
      CloseIfOpen(fd);
    }
  };
  if (null_fd < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(report_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close_all();
    return absl::InternalError(
        absl::StrCat("cannot create pipes for ", name, ": ", std::strerror(error)));
  }

  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    close_all();
    return absl::InternalError(
        absl::StrCat("cannot fork to start ", name, " (", binary, "): ", std::strerror(error)));
  }
  if (pid == 0) {
    ExecChild(launcher, null_fd, out_pipe[1], err_pipe[1], report_pipe[1], binary.c_str(),
              argv.data());
  }

  CloseIfOpen(&report_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {  // exec failed; the child exits
    close_all();
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoError(exec_errno, absl::StrCat("cannot execute ", binary, " for ", name));
  }

  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->name_ = std::move(name);
  child->pid_ = pid;
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
