// Child processes of cairn-bench: the Cairn daemons and the reference server.
// A child's stdout and stderr go to log files; it is stopped with SIGTERM (then
// SIGKILL) by Stop() or by the destructor, and it gets SIGKILL from the kernel
// when the benchmark dies (PR_SET_PDEATHSIG), so no run leaves orphans, even
// one that crashes.
#ifndef CAIRN_TOOLS_BENCH_BENCH_PROCESS_H_
#define CAIRN_TOOLS_BENCH_BENCH_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::bench {

// Not thread-safe; confined to the thread that spawned it (the main thread:
// PR_SET_PDEATHSIG fires when the spawning thread ends).
class ChildProcess {
 public:
  // Starts `binary` (a path, not searched in PATH) with `args` (argv[1..]);
  // stdin from /dev/null, stdout and stderr to `log_prefix` + ".stdout" /
  // ".stderr", or shared with this process when `log_prefix` is empty.
  // Errors: NotFound naming `binary` when it is not an executable file;
  // Internal naming the system call that failed.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::string& binary, const std::vector<std::string>& args,
      const std::string& log_prefix);

  // Stop(absl::Seconds(5)) when still running.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& binary() const { return binary_; }

  // True while the child has not ended (reaps it when it has).
  bool Running();

  // Waits for the child to exit by itself. OK on exit code 0; Internal naming
  // the binary and how it ended otherwise.
  absl::Status Wait();

  // SIGTERM, waits up to `grace`, then SIGKILL. OK when the child exited with
  // code 0 (now or before); Internal naming the binary and how it ended
  // otherwise (exit code or signal).
  absl::Status Stop(absl::Duration grace);

  // The last `max_bytes` of what the child wrote to stderr ("" when shared).
  std::string StderrTail(size_t max_bytes = 2000) const;

 private:
  ChildProcess() = default;
  // Non-blocking waitpid; records how the child ended.
  bool Reap();
  std::string DescribeExit() const;
  // OK when the reaped child exited with code 0, else Internal.
  absl::Status ExitStatus() const;

  std::string binary_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// Waits up to `timeout` for a port file of "name=port" lines, written
// atomically by a daemon once it serves. When `process` ends first, fails at
// once with Unavailable quoting its stderr. DeadlineExceeded when no file came;
// InvalidArgument for a malformed line.
absl::StatusOr<std::map<std::string, int>> WaitForPortFile(const std::string& path,
                                                           absl::Duration timeout,
                                                           ChildProcess* process);

// A fresh directory $TMPDIR/<prefix>.XXXXXX (/tmp without TMPDIR).
absl::StatusOr<std::string> MakeRunDir(const std::string& prefix);

// Writes `content` to `path` + ".tmp" and renames it to `path`, so a reader
// sees no file or the whole file. Internal naming the path on failure.
absl::Status WriteTextFile(const std::string& path, const std::string& content);

// Minor page faults of process `pid` so far, all threads (minflt of
// /proc/<pid>/stat). A fault here is a first touch of memory the kernel must
// map and zero, which large buffers grown piece by piece keep paying.
// NotFound when the process is gone; Internal when the file does not parse.
absl::StatusOr<int64_t> MinorFaults(pid_t pid);

// CPU seconds (user + system, all threads) of process `pid` so far (utime
// and stime of /proc/<pid>/stat, in clock ticks of 1 / sysconf(_SC_CLK_TCK)
// s). Errors as MinorFaults.
absl::StatusOr<double> CpuSeconds(pid_t pid);

// The directory holding the running executable (from /proc/self/exe).
absl::StatusOr<std::string> ExecutableDir();

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_PROCESS_H_
