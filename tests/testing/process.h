// Child processes for integration tests: start one of our binaries with
// arguments, capture its stdout and stderr in files, wait for it with a
// timeout, signal or SIGKILL it, and read the port file it writes once serving.
//
// Typical use (a daemon on free ports, stopped gracefully):
//
//   absl::StatusOr<std::string> dir = MakeTempDir("coordinator_test");
//   REQUIRE(dir.ok());
//   auto coordinator = Subprocess::Spawn(
//       CAIRN_BINARY_DIR "/bin/cairn-coordinator",
//       {"--config", *dir + "/job.yaml", "--listen", "127.0.0.1:0",
//        "--port-file", *dir + "/ports"},
//       *dir + "/coordinator");        // logs: coordinator.stdout, .stderr
//   REQUIRE(coordinator.ok());
//   auto ports = ReadPortFile(*dir + "/ports", absl::Seconds(10), coordinator->get());
//   REQUIRE(ports.ok());               // (*ports)["grpc"], (*ports)["metrics"]
//   REQUIRE((*coordinator)->Signal(SIGTERM).ok());
//   auto ended = (*coordinator)->Wait(absl::Seconds(10));
//   REQUIRE(ended.ok());
//   CHECK(ended->code == 0);
//
// A child never outlives its test: the destructor SIGKILLs and reaps it, and
// the child gets SIGKILL when the thread that spawned it dies
// (PR_SET_PDEATHSIG), so a crashed test leaves no orphan daemons.
#ifndef CAIRN_TESTS_TESTING_PROCESS_H_
#define CAIRN_TESTS_TESTING_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::testing {

// How a child ended.
struct ExitStatus {
  int code = -1;   // exit code when it exited normally, else -1
  int signal = 0;  // the signal that killed it, else 0

  bool exited() const { return signal == 0 && code >= 0; }
  // "exit code 3" / "killed by signal 9 (Killed)".
  std::string ToString() const;
};

// One child process. Not thread-safe; confined to the test thread that
// spawned it.
class Subprocess {
 public:
  // Starts `binary` (a path, not searched in PATH) with `args` (argv[1..]),
  // its stdin from /dev/null, stdout to `log_prefix` + ".stdout" and stderr to
  // `log_prefix` + ".stderr" (both truncated). The environment is inherited.
  // Errors: NotFound / PermissionDenied / Internal naming `binary` when it
  // cannot be executed; Internal when the log files cannot be created.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const std::string& binary,
                                                           const std::vector<std::string>& args,
                                                           const std::string& log_prefix);

  // SIGKILLs and reaps the child if it still runs.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for the child to end and returns how it ended (also
  // after it was already reaped). DeadlineExceeded when it still runs; the
  // child is left running then.
  absl::StatusOr<ExitStatus> Wait(absl::Duration timeout);

  // True while the child has not ended (reaps it when it has).
  bool Running();

  // Sends `signal` (SIGTERM for a graceful stop). FailedPrecondition once the
  // child has been reaped. SIGSTOP returns once every thread of the child
  // has stopped (FailedPrecondition if it ended instead).
  absl::Status Signal(int signal);

  // SIGKILLs the child and reaps it; returns how it ended (a child that had
  // already exited keeps its own status).
  ExitStatus Kill();

  // Waits until the child's stderr contains `text` (log lines go to stderr).
  // DeadlineExceeded after `timeout`; FailedPrecondition, quoting the end of
  // stderr, when the child ends first without having written it.
  absl::Status WaitForStderr(const std::string& text, absl::Duration timeout);

  // What the child wrote so far.
  std::string ReadStdout() const;
  std::string ReadStderr() const;
  const std::string& stdout_path() const { return stdout_path_; }
  const std::string& stderr_path() const { return stderr_path_; }
  const std::string& binary() const { return binary_; }

 private:
  Subprocess() = default;
  // Non-blocking waitpid; records the status when the child has ended.
  bool Reap();

  std::string binary_;
  std::string stdout_path_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::optional<ExitStatus> exit_status_;  // set once reaped
};

// Reads a port file of "name=port" lines ("grpc=40123\nmetrics=40124\n"),
// waiting up to `timeout` for it to appear. Writers rename the file into
// place, so an existing file is complete. When `process` is given and ends
// before the file appears, fails at once with FailedPrecondition quoting its
// exit status and the end of its stderr.
// Errors: DeadlineExceeded (no file in time), InvalidArgument (a line that is
// not name=port).
absl::StatusOr<std::map<std::string, int>> ReadPortFile(const std::string& path,
                                                        absl::Duration timeout,
                                                        Subprocess* process = nullptr);

// A fresh empty directory under $TMPDIR (else /tmp) named
// <prefix>.XXXXXX. Removed with its contents when the running test case
// passes; kept, with its logs, when it fails (temp_dirs.h).
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix);

// Writes `content` to `path` (created or truncated). Internal naming the path
// on failure.
absl::Status WriteFile(const std::string& path, const std::string& content);

// The whole file, or "" when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then
// released), for a tool that takes a fixed port. Internal on socket errors.
absl::StatusOr<int> FreeLoopbackPort();

// The number of a field of /proc/<pid>/status ("Threads", "RssAnon",
// "VmHWM", ...), in the file's unit (kB for sizes); -1 when the process or
// the field is gone.
double ProcStatusField(pid_t pid, const std::string& field);

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_PROCESS_H_
