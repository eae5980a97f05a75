// What every Cairn daemon does the same way: exit codes, termination signals,
// and the port file through which launchers and tests learn bound ports.
#ifndef CAIRN_COMMON_DAEMON_H_
#define CAIRN_COMMON_DAEMON_H_

#include <atomic>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace cairn {

// Process exit codes shared by every binary (docs/deploy.md, "Exit codes").
// Permanent: running the process again with the same input fails the same
// way; a scheduler should fail the job. Retryable: a restart may succeed.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;          // permanent: the job itself failed
inline constexpr int kExitBadConfig = 2;        // permanent: bad flags, YAML or index
inline constexpr int kExitPortTaken = 3;        // retryable: cannot listen
inline constexpr int kExitUnreachable = 4;      // retryable: coordinator unreachable or its
                                                // name unresolved; start-up barrier timed out
inline constexpr int kExitLostCoordinator = 5;  // retryable: coordinator gone for too long
inline constexpr int kExitWorkerLost = 6;       // permanent: coordinator, a worker lost under
                                                // cluster.on_worker_loss: fail
inline constexpr int kExitDeclaredDead = 7;     // retryable: server declared dead (fenced)
inline constexpr int kExitAllWorkersLost = 8;   // permanent: coordinator, every worker lost
inline constexpr int kExitDataLost = 9;         // permanent: coordinator, a replica group lost
                                                // every copy and no checkpoint covers it
inline constexpr int kExitJobFailed = 10;       // permanent: server or worker, the coordinator
                                                // ended the job as failed
inline constexpr int kExitIndexTaken = 11;      // retryable: another live process holds the
                                                // index (ALREADY_EXISTS); free once its lease ends

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// afterwards; call first thing in main().
void BlockTerminationSignals();

// Keeps freed memory in the process for reuse: glibc otherwise serves every
// allocation above 128 KiB (a request or reply of parameters) with a fresh
// mmap, whose pages fault and are zeroed again on every step, and returns it
// with munmap. Call first thing in main() of processes on the data path.
void TuneAllocator();

// TuneAllocator, and the freed memory of every thread kept in one pool (one
// glibc malloc arena, where glibc's default is up to 8 per core): a Cairn
// daemon's gRPC threads each handle large messages, and with an arena per
// thread each kept its own messages' freed memory, so the process's
// resident memory grew with its threads. A server training the 23 MB
// example peaked at 4.6-4.8x its tables and slots through gRPC, 3.3x with
// one arena, at the same or lower CPU per request (docs/benchmarks.md).
// Small allocations stay per thread (glibc's tcache). Leaves the number of
// arenas as it is when MALLOC_ARENA_MAX is set, so an operator may choose
// more. For Cairn's own daemons; a process that embeds the client calls
// TuneAllocator alone (its other threads may allocate at a rate one pool
// would slow). Call first thing in main(), before any thread starts.
void TuneDaemonAllocator();

// Turns off absl::Mutex's deadlock detection for this process. A build of
// Abseil without NDEBUG (Debian's) records every lock order in one global
// graph, under one global lock, on every Mutex acquisition: on the data
// path that is a few percent of the CPU and a point every thread contends
// on. The binaries call it first thing in main(); the tests keep the
// detection (and clang's -Wthread-safety checks the lock order statically).
void DisableMutexDeadlockDetection();

// Waits until SIGINT/SIGTERM arrives or `*stop` becomes true (checked every
// 100 ms). Returns the signal number, or 0 when `*stop` ended the wait.
int WaitForTermination(const std::atomic<bool>* stop);

// While it lives, a SIGINT/SIGTERM ends the process at once with exit 0,
// logging "received <signal> <while>; stopping": for the waits of a start
// that holds nothing yet (resolving the coordinator's name, registering),
// so a stop asked for meanwhile is not held up to a start-up timeout. The
// signals must be blocked (BlockTerminationSignals). Not copyable.
class StopWhileWaiting {
 public:
  explicit StopWhileWaiting(std::string while_doing);
  ~StopWhileWaiting();
  StopWhileWaiting(const StopWhileWaiting&) = delete;
  StopWhileWaiting& operator=(const StopWhileWaiting&) = delete;

 private:
  std::atomic<bool> over_{false};
  std::thread watcher_;
};

// Flushes logs and standard streams and ends the process with `code` at
// once, skipping destructors: for the last line of a daemon's shutdown, once
// its servers are stopped (the /metrics web server alone would take about
// 2 s to stop). Threads still running may go on logging until the end: the
// loggers stay.
[[noreturn]] void ExitNow(int code);

// Writes "grpc=<port>\nmetrics=<port>\n" to `path` atomically (temporary file
// + rename), so a reader never sees a partial file.
absl::Status WritePortFile(const std::string& path, int grpc_port, int metrics_port);

}  // namespace cairn

#endif  // CAIRN_COMMON_DAEMON_H_
