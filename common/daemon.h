// What every Cairn daemon does the same way: exit codes, termination signals,
// and the port file through which launchers and tests learn bound ports.
#ifndef CAIRN_COMMON_DAEMON_H_
#define CAIRN_COMMON_DAEMON_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace cairn {

// Process exit codes shared by every binary.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;         // the job itself failed
inline constexpr int kExitBadConfig = 2;       // bad flags or YAML
inline constexpr int kExitPortTaken = 3;       // cannot listen
inline constexpr int kExitUnreachable = 4;     // coordinator unreachable / start-up timeout
inline constexpr int kExitLostCoordinator = 5; // coordinator gone for too long
inline constexpr int kExitDeclaredDead = 7;    // server: the coordinator declared it dead (fenced)

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// afterwards; call first thing in main().
void BlockTerminationSignals();

// Keeps freed memory in the process for reuse: glibc otherwise serves every
// allocation above 128 KiB (a request or reply of parameters) with a fresh
// mmap, whose pages fault and are zeroed again on every step, and returns it
// with munmap. Call first thing in main() of processes on the data path.
void TuneAllocator();

// Waits until SIGINT/SIGTERM arrives or `*stop` becomes true (checked every
// 100 ms). Returns the signal number, or 0 when `*stop` ended the wait.
int WaitForTermination(const std::atomic<bool>* stop);

// Flushes logs and standard streams and ends the process with `code` at
// once, skipping destructors: for the last line of a daemon's shutdown, once
// its servers are stopped and its threads joined (the /metrics web server
// alone would take about 2 s to stop).
[[noreturn]] void ExitNow(int code);

// Writes "grpc=<port>\nmetrics=<port>\n" to `path` atomically (temporary file
// + rename), so a reader never sees a partial file.
absl::Status WritePortFile(const std::string& path, int grpc_port, int metrics_port);

}  // namespace cairn

#endif  // CAIRN_COMMON_DAEMON_H_
