// A measuring process of cairn-bench: runs one method (Cairn's client
// library, or one raw-gRPC reference) over the selected cases.
//
// Each method runs in a process of its own, as a training worker would, so
// one method's allocations never warm or cool the allocator another method
// is timed with: glibc's malloc adapts its mmap and trim thresholds to what
// the process freed before, and a process that once freed a 16 MiB buffer
// stops returning 1 MiB buffers to the kernel (and stops faulting them back
// in), which would flatter whatever runs after it.
#ifndef CAIRN_TOOLS_BENCH_BENCH_DRIVER_H_
#define CAIRN_TOOLS_BENCH_BENCH_DRIVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/bench_cases.h"
#include "tools/bench/bench_report.h"

namespace cairn::bench {

struct DriverOptions {
  std::string method;       // "Cairn", "unary" or "stream"
  std::string target;       // host:port of the coordinator (Cairn) or reference server
  pid_t server_pid = -1;    // the process whose page faults count as the server's
  std::vector<CaseGroup> groups;
  TimingOptions timing;
  int prime_rounds = 1;     // untimed rounds over every group before timing any
  std::string tls_dir;      // TLS methods: the job's certificates (cairn-certs), as worker
  int requests_in_flight = -1;  // Cairn methods: ClientOptions::requests_in_flight; -1: its default
};

// Connects (Cairn: as worker 0, leaving the job at the end), primes, then
// times each group in order and returns one row per group. Progress lines go
// to stderr. Errors name the method and case that failed.
absl::StatusOr<std::vector<Row>> RunDriver(const DriverOptions& options);

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_DRIVER_H_
