#include "tools/bench/bench_process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/spawn.h"
#include "common/status_macros.h"

namespace cairn::bench {
namespace {

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_prefix) {
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot execute ", binary, ": ", strerror(errno),
                                            " (build it, or pass --bin-dir/--build-dir)"));
  }
  const bool inherit = log_prefix.empty();
  const std::string err_path = inherit ? "" : log_prefix + ".stderr";
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  const int out_fd = inherit ? -1 : open((log_prefix + ".stdout").c_str(), kFlags, 0644);
  const int err_fd = inherit ? -1 : open(err_path.c_str(), kFlags, 0644);
  if (!inherit && (out_fd < 0 || err_fd < 0)) {
    absl::Status error = ErrnoError(absl::StrCat("cannot open the logs ", log_prefix, ".*"));
    for (int fd : {out_fd, err_fd}) {
      if (fd >= 0) close(fd);
    }
    return error;
  }
  absl::StatusOr<pid_t> pid =
      SpawnChild(binary, args,
                 {-1, inherit ? STDOUT_FILENO : out_fd, inherit ? STDERR_FILENO : err_fd});
  for (int fd : {out_fd, err_fd}) {
    if (fd >= 0) close(fd);
  }
  if (!pid.ok()) return pid.status();
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess());
  child->binary_ = binary;
  child->stderr_path_ = err_path;
  child->pid_ = *pid;
  return child;
}

ChildProcess::~ChildProcess() {
  if (Running()) Stop(absl::Seconds(5)).IgnoreError();  // destructor: nobody to report to
}

bool ChildProcess::Reap() {
  if (reaped_) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
  }
  return reaped_;
}

bool ChildProcess::Running() { return !Reap(); }

std::string ChildProcess::DescribeExit() const {
  if (WIFEXITED(wait_status_)) return absl::StrCat("exit code ", WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status_), " (",
                        strsignal(WTERMSIG(wait_status_)), ")");
  }
  return "unknown wait status";
}

absl::Status ChildProcess::ExitStatus() const {
  if (WIFEXITED(wait_status_) && WEXITSTATUS(wait_status_) == 0) return absl::OkStatus();
  const std::string tail = StderrTail();
  return absl::InternalError(absl::StrCat(binary_, " (pid ", pid_, ") ended with ",
                                          DescribeExit(),
                                          tail.empty() ? "" : "; stderr ends:\n", tail));
}

absl::Status ChildProcess::Wait() {
  while (!reaped_) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, 0);
    if (r == pid_) {
      reaped_ = true;
      wait_status_ = status;
    } else if (r < 0 && errno != EINTR) {
      return ErrnoError(absl::StrCat("waitpid ", pid_));
    }
  }
  return ExitStatus();
}

absl::Status ChildProcess::Stop(absl::Duration grace) {
  if (!Reap()) {
    kill(pid_, SIGTERM);
    const absl::Time deadline = absl::Now() + grace;
    while (!Reap() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    if (!reaped_) {
      kill(pid_, SIGKILL);
      int status = 0;
      if (waitpid(pid_, &status, 0) == pid_) {
        reaped_ = true;
        wait_status_ = status;
      }
      return absl::InternalError(absl::StrCat(binary_, " (pid ", pid_,
                                              ") ignored SIGTERM for ",
                                              absl::FormatDuration(grace), "; killed"));
    }
  }
  return ExitStatus();
}

std::string ChildProcess::StderrTail(size_t max_bytes) const {
  if (stderr_path_.empty()) return "";
  std::string s = ReadWholeFile(stderr_path_);
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

absl::StatusOr<std::map<std::string, int>> WaitForPortFile(const std::string& path,
                                                           absl::Duration timeout,
                                                           ChildProcess* process) {
  const absl::Time deadline = absl::Now() + timeout;
  while (access(path.c_str(), R_OK) != 0) {
    if (process != nullptr && !process->Running()) {
      return absl::UnavailableError(absl::StrCat(process->binary(),
                                                 " ended before writing ", path,
                                                 "; stderr ends:\n", process->StderrTail()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no port file ", path, " after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::map<std::string, int> ports;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(ReadWholeFile(path), '\n', absl::SkipEmpty())) {
    ++line_number;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, '=');
    int port = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &port)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": \"", line,
                                                     "\" is not name=port"));
    }
    ports[std::string(kv.first)] = port;
  }
  return ports;
}

absl::StatusOr<std::string> MakeRunDir(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/",
                                     prefix, ".XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return ErrnoError(absl::StrCat("mkdtemp ", pattern));
  return pattern;
}

absl::Status WriteTextFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

namespace {

// The fields of /proc/<pid>/stat after "pid (comm)": comm may hold spaces,
// so they are counted after its closing parenthesis (field 0 is the state).
absl::StatusOr<std::vector<std::string>> StatFields(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  const std::string stat = ReadWholeFile(path);
  if (stat.empty()) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) {
    return absl::InternalError(absl::StrCat(path, ": no \"(comm)\" in \"", stat, "\""));
  }
  return std::vector<std::string>(
      absl::StrSplit(absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty()));
}

// Field `index` (after comm) of process `pid`'s stat, named `name` in errors.
absl::StatusOr<int64_t> StatField(pid_t pid, size_t index, const char* name) {
  ASSIGN_OR_RETURN(std::vector<std::string> fields, StatFields(pid));
  int64_t value = 0;
  if (fields.size() <= index || !absl::SimpleAtoi(fields[index], &value)) {
    return absl::InternalError(absl::StrCat("/proc/", pid, "/stat: no ", name, " field"));
  }
  return value;
}

}  // namespace

absl::StatusOr<int64_t> MinorFaults(pid_t pid) { return StatField(pid, 7, "minflt"); }

absl::StatusOr<double> CpuSeconds(pid_t pid) {
  ASSIGN_OR_RETURN(const int64_t utime, StatField(pid, 11, "utime"));
  ASSIGN_OR_RETURN(const int64_t stime, StatField(pid, 12, "stime"));
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

absl::StatusOr<std::string> ExecutableDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ErrnoError("readlink /proc/self/exe");
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace cairn::bench
