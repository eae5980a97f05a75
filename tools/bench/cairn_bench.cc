// cairn-bench: push/pull throughput and latency through Cairn, side by side
// with raw gRPC moving the same bytes on the same machine.
//
// Starts cairn-coordinator and cairn-server (1 server, 1 worker, ASP, all on
// loopback) from a job YAML it writes, and a reference gRPC server (this
// binary, --serve-reference). Then, one measuring process per method (this
// binary, --drive; see bench_driver.h for why), it times
//   Cairn-shm   the client library's PushDense/PullDense/PushSparse/PullSparse,
//               values through the same-host shared region
//   Cairn-shm-lent  the same path with the values in a buffer the client
//               lent from the region (Client::LendSharedBuffer), pushed from
//               and pulled into in place, as cairn-worker keeps its model
//               with one server on its host (not in the default --methods)
//   Cairn-gRPC  the same, values through gRPC (ClientOptions::shared_memory off)
//   Cairn-shm-slot, Cairn-shm-lent-slot  the two same-host paths against a
//               cluster of their own whose server polls between calls, as
//               cairn-launch's daemons do, with a client that polls too:
//               each push and pull goes through the region's call slot
//               instead of a gRPC call (the lent one is not in the default
//               --methods)
//   Cairn-gRPC-applied  Cairn-gRPC against a cluster whose server answers
//               each push once applied (rpc.push_ack: applied; the others
//               answer a plain push once accepted, the default; not in the
//               default --methods)
//   Cairn-shm-TLS, Cairn-gRPC-TLS  the same two against a second cluster
//               with mutual TLS on (certificates made for the run; not in
//               the default --methods): their ratio to the rows above is
//               TLS's cost
//   unary   one unary gRPC call carrying the same keys and values
//   unary-callback  the same call through gRPC's callback API, the caller
//           waiting on a future (how Cairn's client completes; not in the
//           default --methods)
//   stream  one streaming call carrying them in pieces of <= 1 MiB (at least
//           four), several in flight
//   memcpy  one copy of the value bytes in the measuring process (no server)
// over every selected case, after priming and a warm-up (with --rounds N,
// N times, each method in turn, in rounds), and prints a markdown table
// (units in bench_report.h) and, with --json, the same numbers as JSON.
// Every child process is stopped at the end, and dies with this process if
// it crashes.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/daemon.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "tools/bench/bench_cases.h"
#include "tools/bench/bench_cluster.h"
#include "tools/bench/bench_driver.h"
#include "tools/bench/bench_process.h"
#include "tools/bench/bench_reference.h"
#include "tools/bench/bench_report.h"
#include "tools/launch/job_certificates.h"

#ifndef CAIRN_BUILD_TYPE
#define CAIRN_BUILD_TYPE "unknown"
#endif

namespace cairn::bench {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);

struct Flags {
  std::string bin_dir;
  std::string build_dir;
  int iterations = 0;
  double seconds = 3.0;
  double warmup_seconds = 0.5;
  int prime_rounds = 1;
  int rounds = 1;
  std::string cases = "all";
  std::string methods = "Cairn-shm,Cairn-shm-slot,Cairn-gRPC,unary,stream,memcpy";
  std::string json_path;
  bool keep_logs = false;
  // Internal modes: this binary as the reference server or as a driver.
  std::string serve_reference;  // port file
  std::string drive;            // method
  std::string target;           // driver: host:port to measure
  int server_pid = -1;          // driver: the serving process
  std::string rows_out;         // driver: where its rows go (raw JSON)
  std::string tls_dir;          // driver of a TLS method: the job's certificates
  int requests_in_flight = -1;  // Cairn methods: ClientOptions::requests_in_flight; -1: its default
  std::string request_split;        // the job's rpc.request_split_size; empty: its default
  std::string shared_memory_split;  // the job's rpc.shared_memory_split_size; empty: its default
};

constexpr const char* kMethods[] = {kCairnShared,     kCairnSharedLent, kCairnSharedSlot,
                                    kCairnSharedLentSlot, kCairnGrpc,  kCairnGrpcApplied,
                                    kCairnSharedTls,
                                    kCairnGrpcTls,    "unary",          "unary-callback",
                                    "stream",         "memcpy"};

std::string ShellQuote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_=./,:") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string CommandLine(int argc, char** argv) {
  std::vector<std::string> words = {"cairn-bench"};
  for (int i = 1; i < argc; ++i) words.push_back(ShellQuote(argv[i]));
  return absl::StrJoin(words, " ");
}

absl::StatusOr<std::vector<std::string>> SelectMethods(const std::string& list) {
  std::vector<std::string> out;
  for (const char* m : kMethods) {
    if (absl::StrContains(absl::StrCat(",", list, ","), absl::StrCat(",", m, ","))) {
      out.push_back(m);
    }
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--methods \"", list, "\" names none of ", absl::StrJoin(kMethods, ", ")));
  }
  return out;
}

// The flags a driver shares with the run that started it.
std::vector<std::string> TimingArgs(const Flags& flags) {
  return {"--cases", flags.cases,
          "--iterations", absl::StrCat(flags.iterations),
          "--seconds", absl::StrCat(flags.seconds),
          "--warmup-seconds", absl::StrCat(flags.warmup_seconds),
          "--prime-rounds", absl::StrCat(flags.prime_rounds)};
}

// Runs one driver process to completion and returns its rows.
absl::StatusOr<std::vector<Row>> RunDriverProcess(const Flags& flags, const std::string& method,
                                                  const std::string& target, pid_t server_pid,
                                                  const std::string& run_dir) {
  ASSIGN_OR_RETURN(std::string self_dir, ExecutableDir());
  const std::string rows_path = absl::StrCat(run_dir, "/rows.", method, ".json");
  std::vector<std::string> args = {"--drive", method, "--target", target, "--server-pid",
                                   absl::StrCat(server_pid), "--rows-out", rows_path};
  if (IsTlsMethod(method)) {
    args.push_back("--tls-dir");
    args.push_back(run_dir + "/certs");
  }
  if (flags.requests_in_flight >= 0) {
    args.push_back("--requests-in-flight");
    args.push_back(absl::StrCat(flags.requests_in_flight));
  }
  for (std::string& a : TimingArgs(flags)) args.push_back(std::move(a));
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> driver,
                   ChildProcess::Spawn(self_dir + "/cairn-bench", args, /*log_prefix=*/""));
  RETURN_IF_ERROR(Annotate(driver->Wait(), absl::StrCat("measuring ", method)));
  std::ifstream in(rows_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(absl::StrCat("cannot parse ", rows_path));
  }
  return RowsFromRawJson(json);
}

// Starts the servers, runs one driver per method, stops everything. Rows come
// out group by group, methods in kMethods' order.
absl::Status RunBenchmark(const Flags& flags, const std::vector<std::string>& methods,
                          const std::string& bin_dir, const std::string& run_dir,
                          std::vector<Row>* rows) {
  ASSIGN_OR_RETURN(std::unique_ptr<BenchCluster> cluster,
                   BenchCluster::Start(bin_dir, run_dir,
                                       BenchJobYaml(flags.request_split, flags.shared_memory_split)));
  ASSIGN_OR_RETURN(std::string self_dir, ExecutableDir());
  const std::string reference_ports = run_dir + "/reference.ports";
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> reference,
                   ChildProcess::Spawn(self_dir + "/cairn-bench",
                                       {"--serve-reference", reference_ports},
                                       run_dir + "/reference"));
  ASSIGN_OR_RETURN(auto ports, WaitForPortFile(reference_ports, kStartTimeout, reference.get()));
  const std::string reference_address = absl::StrCat("127.0.0.1:", ports["grpc"]);

  // TLS methods measure a second cluster, started with certificates made
  // for it (as cairn-launch --tls does).
  std::unique_ptr<BenchCluster> tls_cluster;
  if (std::any_of(methods.begin(), methods.end(), IsTlsMethod)) {
    ASSIGN_OR_RETURN(std::vector<std::string> tls_flags, launch::MakeJobCertificates(bin_dir, run_dir));
    std::filesystem::create_directories(run_dir + "/tls");
    ASSIGN_OR_RETURN(tls_cluster, BenchCluster::Start(bin_dir, run_dir + "/tls",
                                                      BenchJobYaml(flags.request_split,
                                                                   flags.shared_memory_split),
                                                      tls_flags));
  }
  // Call-slot methods measure a cluster whose server polls.
  std::unique_ptr<BenchCluster> slot_cluster;
  if (std::any_of(methods.begin(), methods.end(), IsSlotMethod)) {
    std::filesystem::create_directories(run_dir + "/slots");
    ASSIGN_OR_RETURN(slot_cluster,
                     BenchCluster::Start(bin_dir, run_dir + "/slots",
                                         BenchJobYaml(flags.request_split,
                                                      flags.shared_memory_split, kSlotBusyPoll)));
  }
  // Cairn-gRPC-applied measures a cluster that answers pushes once applied.
  std::unique_ptr<BenchCluster> applied_cluster;
  if (std::find(methods.begin(), methods.end(), kCairnGrpcApplied) != methods.end()) {
    std::filesystem::create_directories(run_dir + "/applied");
    ASSIGN_OR_RETURN(
        applied_cluster,
        BenchCluster::Start(bin_dir, run_dir + "/applied",
                            BenchJobYaml(flags.request_split, flags.shared_memory_split,
                                         absl::ZeroDuration(), "applied")));
  }
  std::vector<std::vector<Row>> rounds;
  for (int round = 0; round < flags.rounds; ++round) {
    if (flags.rounds > 1) {
      std::cerr << "cairn-bench: round " << round + 1 << "/" << flags.rounds << "\n";
    }
    // Every other round runs the methods in reverse order, so that a slow
    // spell of the machine weighs on each of them alike.
    std::vector<size_t> order(methods.size());
    for (size_t m = 0; m < order.size(); ++m) order[m] = round % 2 == 0 ? m : order.size() - 1 - m;
    std::vector<std::vector<Row>> by_method(methods.size());
    for (size_t m : order) {
      const std::string& method = methods[m];
      const bool cairn = IsCairnMethod(method);
      const BenchCluster* target = IsTlsMethod(method)           ? tls_cluster.get()
                                   : IsSlotMethod(method)        ? slot_cluster.get()
                                   : method == kCairnGrpcApplied ? applied_cluster.get()
                                                                 : cluster.get();
      ASSIGN_OR_RETURN(
          by_method[m],
          RunDriverProcess(flags, method,
                           cairn ? target->coordinator_address() : reference_address,
                           cairn ? target->server_pid() : reference->pid(), run_dir));
    }
    // Group by group, methods in kMethods' order.
    std::vector<Row>& round_rows = rounds.emplace_back();
    for (size_t g = 0; !by_method.empty() && g < by_method[0].size(); ++g) {
      for (std::vector<Row>& r : by_method) {
        if (g < r.size()) round_rows.push_back(std::move(r[g]));
      }
    }
  }
  ASSIGN_OR_RETURN(*rows, PoolRounds(rounds));
  absl::Status stopped = reference->Stop(absl::Seconds(5));
  stopped.Update(cluster->Stop());
  if (tls_cluster != nullptr) stopped.Update(tls_cluster->Stop());
  if (slot_cluster != nullptr) stopped.Update(slot_cluster->Stop());
  if (applied_cluster != nullptr) stopped.Update(applied_cluster->Stop());
  return stopped;
}

std::string MachineLine() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return absl::StrCat(model, ", ", std::thread::hardware_concurrency(), " logical CPUs");
}

TimingOptions TimingFromFlags(const Flags& flags) {
  TimingOptions timing;
  timing.iterations = flags.iterations;
  timing.target = absl::Seconds(flags.seconds);
  timing.warmup = absl::Seconds(flags.warmup_seconds);
  return timing;
}

int Drive(const Flags& flags, const std::vector<CaseGroup>& groups) {
  if (std::find(std::begin(kMethods), std::end(kMethods), flags.drive) == std::end(kMethods)) {
    std::cerr << "cairn-bench: --drive \"" << flags.drive << "\" is not one of "
              << absl::StrJoin(kMethods, ", ") << "\n";
    return 2;
  }
  DriverOptions options;
  options.method = flags.drive;
  options.target = flags.target;
  options.server_pid = flags.server_pid;
  options.groups = groups;
  options.timing = TimingFromFlags(flags);
  options.prime_rounds = flags.prime_rounds;
  options.tls_dir = flags.tls_dir;
  options.requests_in_flight = flags.requests_in_flight;
  absl::StatusOr<std::vector<Row>> rows = RunDriver(options);
  absl::Status status = rows.status();
  if (status.ok()) {
    status = WriteTextFile(flags.rows_out, RowsToRawJson(*rows).dump() + "\n");
  }
  if (!status.ok()) {
    std::cerr << "\ncairn-bench (" << flags.drive << "): " << status.message() << "\n";
    return 1;
  }
  return 0;
}

void PrintReport(const std::string& command, const std::vector<Row>& rows) {
  std::cout << "Command: `" << command << "`  \n"
            << "Build: " << CAIRN_BUILD_TYPE << "; machine: " << MachineLine()
            << "; 1 coordinator + 1 server + 1 worker on loopback, ASP; *-slot rows: "
            << "server and client poll " << absl::FormatDuration(kSlotBusyPoll)
            << " (rpc.busy_poll), calls through the region's call slot; every other process "
               "sleeps as it waits  \n"
            << "MB/s = value bytes / s (1 MB = 1e6 B; keys not counted); p50/p99 = latency "
               "of one push or pull; ratios = Cairn MB/s / reference MB/s (memcpy: one copy of "
               "the values in one process); faults/iter = "
               "minor page faults per iteration, worker process / server process; worker CPU, "
               "server CPU = ms of CPU the calling / serving process spent per iteration\n\n"
            << MarkdownTable(rows) << TlsCostTable(rows);
}

int Main(int argc, char** argv, const Flags& flags) {
  if (!flags.serve_reference.empty()) {
    return RunReferenceServer(flags.serve_reference, kBenchMaxMessageBytes);
  }
  InitLogging("bench", "warn");
  absl::StatusOr<std::vector<CaseGroup>> groups = SelectCaseGroups(flags.cases);
  absl::StatusOr<std::vector<std::string>> methods = SelectMethods(flags.methods);
  for (const absl::Status& s : {groups.status(), methods.status()}) {
    if (!s.ok()) {
      std::cerr << "cairn-bench: " << s.message() << "\n";
      return 2;
    }
  }
  if (!flags.drive.empty()) return Drive(flags, *groups);

  std::string bin_dir = flags.build_dir.empty() ? flags.bin_dir : flags.build_dir + "/bin";
  if (bin_dir.empty()) {
    absl::StatusOr<std::string> dir = ExecutableDir();
    if (!dir.ok()) {
      std::cerr << "cairn-bench: " << dir.status().message() << "\n";
      return 1;
    }
    bin_dir = *dir;
  }
  absl::StatusOr<std::string> run_dir = MakeRunDir("cairn-bench");
  if (!run_dir.ok()) {
    std::cerr << "cairn-bench: " << run_dir.status().message() << "\n";
    return 1;
  }
  std::vector<Row> rows;
  if (absl::Status s = RunBenchmark(flags, *methods, bin_dir, *run_dir, &rows); !s.ok()) {
    std::cerr << "\ncairn-bench: " << s.message() << "\n(logs in " << *run_dir << ")\n";
    return 1;
  }
  const std::string command = CommandLine(argc, argv);
  PrintReport(command, rows);
  if (!flags.json_path.empty()) {
    nlohmann::json j = {{"command", command},
                        {"build_type", CAIRN_BUILD_TYPE},
                        {"machine", MachineLine()},
                        {"rows", RowsToJson(rows)}};
    std::ofstream out(flags.json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::cerr << "cairn-bench: cannot write --json " << flags.json_path << "\n";
      return 1;
    }
  }
  if (flags.keep_logs) {
    std::cerr << "logs in " << *run_dir << "\n";
  } else {
    std::error_code ignored;  // a leftover temporary directory is harmless
    std::filesystem::remove_all(*run_dir, ignored);
  }
  return 0;
}

}  // namespace
}  // namespace cairn::bench

int main(int argc, char** argv) {
  cairn::TuneDaemonAllocator();  // as cairn-worker does: the bench is a worker process
  cairn::DisableMutexDeadlockDetection();
  cairn::bench::Flags flags;
  CLI::App app{"cairn-bench: Cairn push/pull throughput and latency next to raw gRPC "
               "(unary and streaming) moving the same bytes over loopback."};
  auto* bin = app.add_option("--bin-dir", flags.bin_dir,
                             "directory holding cairn-coordinator and cairn-server "
                             "(default: this executable's directory)");
  app.add_option("--build-dir", flags.build_dir, "CMake build directory (uses <dir>/bin)")
      ->excludes(bin);
  app.add_option("--iterations", flags.iterations,
                 "timed iterations per case; 0: as many as fit in --seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seconds", flags.seconds, "timed seconds per case when --iterations is 0")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup-seconds", flags.warmup_seconds,
                 "untimed seconds before each case (at least 3 iterations)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--prime-rounds", flags.prime_rounds,
                 "untimed rounds over every selected case before the first is timed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--rounds", flags.rounds,
                 "times every method runs every case, in rounds (methods in reverse order in "
                 "every other round); ratios are taken within a round, their median printed "
                 "with the lowest and highest")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--cases", flags.cases,
                 "comma-separated: all, push-1mib, pull-1mib, push-1mib-bf16, pull-1mib-bf16, push-16mib, pull-16mib, "
                 "sparse-push, sparse-pull")
      ->capture_default_str();
  app.add_option("--methods", flags.methods, absl::StrCat("comma-separated, of: ", absl::StrJoin(cairn::bench::kMethods, ", ")))
      ->capture_default_str();
  app.add_option("--json", flags.json_path, "also write the results as JSON to this file");
  app.add_option("--requests-in-flight", flags.requests_in_flight,
                 "Cairn methods: requests of one push or pull in flight per server "
                 "(ClientOptions::requests_in_flight); default: the client's")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--request-split-size", flags.request_split,
                 "the job's rpc.request_split_size (e.g. 256KiB): Cairn-gRPC requests are cut "
                 "at this many value bytes; default: the job's default (1MiB)");
  app.add_option("--shared-memory-split-size", flags.shared_memory_split,
                 "the job's rpc.shared_memory_split_size (e.g. 1MiB): Cairn-shm requests are cut "
                 "at this many value bytes; default: the job's default");
  app.add_flag("--keep-logs", flags.keep_logs, "keep the run directory (job YAML, daemon logs)");
  // Internal: how this binary runs its own child processes.
  app.add_option("--serve-reference", flags.serve_reference)->group("");
  app.add_option("--drive", flags.drive)->group("");
  app.add_option("--target", flags.target)->group("");
  app.add_option("--server-pid", flags.server_pid)->group("");
  app.add_option("--rows-out", flags.rows_out)->group("");
  app.add_option("--tls-dir", flags.tls_dir)->group("");
  CLI11_PARSE(app, argc, argv);
  return cairn::bench::Main(argc, argv, flags);
}
