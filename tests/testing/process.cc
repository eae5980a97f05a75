#include "tests/testing/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/spawn.h"
#include "tests/testing/temp_dirs.h"

namespace cairn::testing {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(10);

ExitStatus FromWaitStatus(int status) {
  ExitStatus out;
  if (WIFEXITED(status)) out.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

// The last `max_chars` characters of `text`.
std::string Tail(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal != 0) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", code);
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_prefix) {
  std::unique_ptr<Subprocess> process(new Subprocess());
  process->binary_ = binary;
  process->stdout_path_ = log_prefix + ".stdout";
  process->stderr_path_ = log_prefix + ".stderr";

  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  const int out_fd = ::open(process->stdout_path_.c_str(), kFlags, 0644);
  const int err_fd = ::open(process->stderr_path_.c_str(), kFlags, 0644);
  const int open_errno = errno;
  auto close_all = [&] {
    for (int fd : {out_fd, err_fd}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (out_fd < 0 || err_fd < 0) {
    close_all();
    return ErrnoStatus(open_errno, absl::StrCat("cannot create the log files ", log_prefix,
                                                ".{stdout,stderr} for ", binary));
  }
  absl::StatusOr<pid_t> pid = SpawnChild(binary, args, {-1, out_fd, err_fd});
  close_all();
  if (!pid.ok()) return pid.status();
  process->pid_ = *pid;
  return process;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_status_.has_value()) Kill();
}

bool Subprocess::Reap() {
  if (exit_status_.has_value()) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = FromWaitStatus(status);
    return true;
  }
  return false;
}

absl::StatusOr<ExitStatus> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!Reap()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          binary_, " (pid ", pid_, ") still runs after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(kPollInterval);
  }
  return *exit_status_;
}

bool Subprocess::Running() { return !Reap(); }

absl::Status Subprocess::Signal(int signal) {
  if (Reap()) {
    return absl::FailedPreconditionError(
        absl::StrCat(binary_, " (pid ", pid_, ") has already ended: ", exit_status_->ToString()));
  }
  if (::kill(pid_, signal) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot signal ", binary_, " (pid ", pid_, ")"));
  }
  if (signal != SIGSTOP) return absl::OkStatus();
  // kill() returns before the stop takes hold: a thread running on another
  // CPU goes on until the kernel interrupts it, a while on a loaded virtual
  // machine. The child is reported stopped once every thread has stopped.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WUNTRACED | WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {
      return ErrnoStatus(errno, absl::StrCat("cannot wait for ", binary_, " (pid ", pid_,
                                             ") to stop"));
    }
    if (absl::Now() >= deadline) {  // (a child stopped already is reported once)
      return absl::DeadlineExceededError(
          absl::StrCat(binary_, " (pid ", pid_, ") not stopped 10s after SIGSTOP"));
    }
    absl::SleepFor(absl::Microseconds(200));
  }
  if (!WIFSTOPPED(status)) {
    exit_status_ = FromWaitStatus(status);
    return absl::FailedPreconditionError(absl::StrCat(binary_, " (pid ", pid_,
                                                      ") ended instead of stopping: ",
                                                      exit_status_->ToString()));
  }
  return absl::OkStatus();
}

ExitStatus Subprocess::Kill() {
  if (!Reap()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_status_ = FromWaitStatus(status);
  }
  return *exit_status_;
}

absl::Status Subprocess::WaitForStderr(const std::string& text, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    // Check whether it ended before reading, so output written just before
    // the end is still seen.
    const bool ended = !Running();
    const std::string err = ReadStderr();
    if (err.find(text) != std::string::npos) return absl::OkStatus();
    if (ended) {
      return absl::FailedPreconditionError(
          absl::StrCat(binary_, " ended (", exit_status_->ToString(), ") without writing \"",
                       text, "\" to stderr, which ends with:\n", Tail(err, 2000)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(binary_, " wrote no \"", text, "\" to stderr within ",
                       absl::FormatDuration(timeout), "; stderr ends with:\n", Tail(err, 2000)));
    }
    absl::SleepFor(kPollInterval);
  }
}

std::string Subprocess::ReadStdout() const { return ReadFileOrEmpty(stdout_path_); }
std::string Subprocess::ReadStderr() const { return ReadFileOrEmpty(stderr_path_); }

absl::StatusOr<std::map<std::string, int>> ReadPortFile(const std::string& path,
                                                        absl::Duration timeout,
                                                        Subprocess* process) {
  const absl::Time deadline = absl::Now() + timeout;
  while (::access(path.c_str(), F_OK) != 0) {
    if (process != nullptr && !process->Running()) {
      absl::StatusOr<ExitStatus> ended = process->Wait(absl::ZeroDuration());
      return absl::FailedPreconditionError(absl::StrCat(
          process->binary(), " ended (", ended.ok() ? ended->ToString() : "unknown",
          ") before writing ", path, "; its stderr ends with:\n",
          Tail(process->ReadStderr(), 2000)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no port file ", path, " after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(kPollInterval);
  }
  std::map<std::string, int> ports;
  for (absl::string_view line : absl::StrSplit(ReadFileOrEmpty(path), '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(line, '=');
    int port = 0;
    if (parts.first.empty() || !absl::SimpleAtoi(parts.second, &port) || port < 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("port file ", path, ": line \"", line, "\" is not name=port"));
    }
    ports[std::string(parts.first)] = port;
  }
  return ports;
}

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/", prefix, ".XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("cannot create a temporary directory ", pattern));
  }
  RemoveWhenTestCasePasses(pattern);
  return pattern;
}

absl::Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("a free loopback port: ", std::strerror(err)));
  return ntohs(addr.sin_port);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

double ProcStatusField(pid_t pid, const std::string& field) {
  const std::string text = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/status"));
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, field + ":")) continue;
    double v = 0;
    line = absl::StripSuffix(absl::StripAsciiWhitespace(line), "kB");
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line), &v)) return v;
  }
  return -1;
}

}  // namespace cairn::testing
