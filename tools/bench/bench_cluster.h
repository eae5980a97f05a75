// The Cairn cluster cairn-bench measures: one cairn-coordinator and one
// cairn-server on loopback (ports picked at run time), started from a job
// YAML written into the run directory, and stopped with SIGTERM at the end.
#ifndef CAIRN_TOOLS_BENCH_BENCH_CLUSTER_H_
#define CAIRN_TOOLS_BENCH_BENCH_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/bench/bench_process.h"

namespace cairn::bench {

// Table names and sizes of the benchmark job (all ASP, SGD, zeros).
inline constexpr char kDense1MiB[] = "dense_1mib";
// The same 2^18 float32 values, travelling as bfloat16 (wire_dtype: bf16).
inline constexpr char kDense1MiBBf16[] = "dense_1mib_bf16";
inline constexpr char kDense16MiB[] = "dense_16mib";
inline constexpr char kSparse[] = "sparse_w64";
inline constexpr int64_t kDense1MiBFloats = int64_t{1} << 18;   // 1 MiB of float32
inline constexpr int64_t kDense16MiBFloats = int64_t{1} << 22;  // 16 MiB of float32
inline constexpr int kSparseWidth = 64;                         // floats per row

// gRPC message-size limit of every process of the run, Cairn's and the
// reference's alike (the job's rpc.max_message_size).
inline constexpr int64_t kBenchMaxMessageBytes = int64_t{256} << 20;

// The job: 1 server, 1 worker, ASP (no barrier, pulls never wait), the three
// tables above, dense chunks of the default size (16384 floats, 64 KiB),
// and kBenchMaxMessageBytes as the message-size limit. `request_split` and
// `shared_memory_split`: rpc.request_split_size and
// rpc.shared_memory_split_size as the YAML spells a size; empty: their
// defaults (1 MiB, 2 MiB). `busy_poll` above zero: the server polls that
// long after each call (rpc.busy_poll), and so takes calls through call
// slots; zero: it sleeps as it waits. `push_ack`: rpc.push_ack ("accepted"
// or "applied"); empty: the default.
std::string BenchJobYaml(const std::string& request_split = "",
                         const std::string& shared_memory_split = "",
                         absl::Duration busy_poll = absl::ZeroDuration(),
                         const std::string& push_ack = "");

// Not thread-safe; confined to the main thread.
class BenchCluster {
 public:
  // Writes `yaml` to <run_dir>/job.yaml, starts <bin_dir>/cairn-coordinator
  // and <bin_dir>/cairn-server (logs in run_dir), and returns once both wrote
  // their port files. Errors name the daemon and quote its stderr.
  // `daemon_flags` go to both daemons (cairn-launch's --tls flags).
  static absl::StatusOr<std::unique_ptr<BenchCluster>> Start(
      const std::string& bin_dir, const std::string& run_dir, const std::string& yaml,
      const std::vector<std::string>& daemon_flags = {});

  // host:port of the coordinator.
  const std::string& coordinator_address() const { return coordinator_address_; }
  // The cairn-server process.
  pid_t server_pid() const { return server_->pid(); }

  // Stops the server, then the coordinator (SIGTERM, 5 s grace each). Internal
  // naming a daemon that did not exit cleanly. The destructor does the same
  // when Stop() was not called.
  absl::Status Stop();

 private:
  BenchCluster() = default;

  std::string coordinator_address_;
  std::unique_ptr<ChildProcess> coordinator_;
  std::unique_ptr<ChildProcess> server_;
};

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_CLUSTER_H_
