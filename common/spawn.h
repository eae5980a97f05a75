// Starting a child process: the one fork/exec of Cairn's launcher, its
// benchmarks and its test harness.
#ifndef CAIRN_COMMON_SPAWN_H_
#define CAIRN_COMMON_SPAWN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn {

// Descriptors the child gets as its stdin, stdout and stderr. The caller keeps
// owning them (the child gets copies); -1 means /dev/null.
struct ChildStdio {
  int in = -1;
  int out = -1;
  int err = -1;
};

// Runs `binary` (a path; no PATH search) with `args` as argv[1..]. The child
// dies with the calling process (PR_SET_PDEATHSIG SIGKILL), starts with every
// signal at its default action and none blocked, and inherits no descriptor
// of the caller but `stdio` (the caller's own must be O_CLOEXEC).
//
// With `cpus` not empty, the child runs only on those CPUs (its scheduler
// affinity, set before exec, so every thread it starts inherits it).
//
// Returns the child's pid once exec succeeded. Errors name `binary`:
// NotFound (no such file), PermissionDenied (not executable), InvalidArgument
// (a CPU of `cpus` out of range or not one the child may use), Internal (fork
// or pipe failed); a child that failed before or at exec is reaped before
// returning. Thread-safe; between fork and exec the child makes only
// async-signal-safe calls.
absl::StatusOr<pid_t> SpawnChild(const std::string& binary, const std::vector<std::string>& args,
                                 ChildStdio stdio, const std::vector<int>& cpus = {});

// The Status for a failed system call: `what`, then strerror(error), with
// ENOENT/ENOTDIR -> NotFound, EACCES/EPERM -> PermissionDenied, the rest ->
// Internal.
absl::Status ErrnoStatus(int error, const std::string& what);

}  // namespace cairn

#endif  // CAIRN_COMMON_SPAWN_H_
