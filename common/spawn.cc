#include "common/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/cpu_affinity.h"

namespace cairn {
namespace {

// What the child reports through its pipe when it fails: where, and errno.
enum class Stage : int { kAffinity = 1, kExec = 2 };
struct Failure {
  Stage stage;
  int error;
};

// Runs in the forked child: only async-signal-safe calls from here on.
// `cpus`, when not null, is the affinity to take.
[[noreturn]] void ExecChild(pid_t parent, const int (&fds)[3], int report_fd, const char* binary,
                            char* const* argv, const cpu_set_t* cpus) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  if (cpus != nullptr && ::sched_setaffinity(0, sizeof(*cpus), cpus) != 0) {
    const Failure failure{Stage::kAffinity, errno};
    [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &failure, sizeof(failure));
    ::_exit(127);
  }
  for (int target = 0; target < 3; ++target) ::dup2(fds[target], target);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(binary, argv);
  const Failure failure{Stage::kExec, errno};
  [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &failure, sizeof(failure));
  ::_exit(127);
}

}  // namespace

absl::Status ErrnoStatus(int error, const std::string& what) {
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

absl::StatusOr<pid_t> SpawnChild(const std::string& binary, const std::vector<std::string>& args,
                                 ChildStdio stdio, const std::vector<int>& cpus) {
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot start ", binary, " on CPU ", cpu, ": CPUs are 0 to ",
                       CPU_SETSIZE - 1));
    }
    CPU_SET(cpu, &cpu_set);
  }
  // argv is built before fork: the child may not allocate.
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.push_back(binary);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  int report[2] = {-1, -1};  // the child writes exec's errno here
  if (null_fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : {null_fd, report[0], report[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return ErrnoStatus(error, absl::StrCat("cannot start ", binary, ": pipe"));
  }
  const int fds[3] = {stdio.in >= 0 ? stdio.in : null_fd, stdio.out >= 0 ? stdio.out : null_fd,
                      stdio.err >= 0 ? stdio.err : null_fd};

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild(parent, fds, report[1], binary.c_str(), argv.data(),
              cpus.empty() ? nullptr : &cpu_set);
  }
  const int fork_errno = errno;
  ::close(report[1]);
  ::close(null_fd);
  if (pid < 0) {
    ::close(report[0]);
    return absl::InternalError(
        absl::StrCat("cannot fork to start ", binary, ": ", std::strerror(fork_errno)));
  }
  Failure failure{};
  ssize_t n;
  do {
    n = ::read(report[0], &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n != static_cast<ssize_t>(sizeof(failure))) return pid;  // exec succeeded
  int status = 0;  // the child failed and exits
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (failure.stage == Stage::kAffinity) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot start ", binary, " on CPUs ", FormatCpuList(cpus), ": ",
                     std::strerror(failure.error)));
  }
  return ErrnoStatus(failure.error, absl::StrCat("cannot execute ", binary));
}

}  // namespace cairn
