// cairn-launch: runs a whole Cairn job on this machine from its YAML file:
// one cairn-coordinator, then cluster.servers cairn-server processes, then
// cluster.workers cairn-worker processes, each on free loopback ports. Every
// line the processes write comes out prefixed with their name; at the end it
// prints the test accuracy and the /metrics URL of every process.
//
//   cairn-launch JOB.yaml [--summary PATH] [--bin-dir DIR] [--workdir DIR]
//                [--set key=value ...] [--no-workers] [-- extra worker flags]
//
// Exit codes: 0 every worker finished (or, with --no-workers, the cluster
// came up); 1 a process failed (named on stderr with its exit status);
// 2 bad flags, bad YAML or a missing binary; 4 a daemon wrote no port file
// within cluster.startup_timeout; 128+N stopped by signal N.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <functional>
#include <filesystem>
#include <algorithm>
#include <iostream>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/config/job_config.h"
#include "common/daemon.h"
#include "tools/launch/job_report.h"
#include "tools/launch/launch_plan.h"
#include "tools/launch/port_file.h"
#include "tools/launch/supervisor.h"

namespace cairn::launch {
namespace {

constexpr absl::Duration kStopGrace = absl::Seconds(5);

struct Flags {
  std::string job;
  std::string summary;
  std::string bin_dir;
  std::string workdir;
  std::vector<std::string> overrides;
  bool no_workers = false;
  std::vector<std::string> worker_flags;  // everything after "--"
};

int BadInput(absl::string_view message) {
  std::fprintf(stderr, "cairn-launch: %s\n",
               absl::StrReplaceAll(message, {{"\n", "\n  "}}).c_str());
  return kExitBadConfig;
}

// Removes a work directory the launcher created itself, whatever the exit.
class TempDirGuard {
 public:
  explicit TempDirGuard(std::string dir) : dir_(std::move(dir)) {}
  ~TempDirGuard() {
    std::error_code ignored;  // best effort: leftovers in $TMPDIR are harmless
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

 private:
  std::string dir_;
};

// Stops every process after `event` (anything but kReady) ended a phase and
// returns the launcher's exit code.
int Abort(Supervisor& supervisor, const Event& event, absl::string_view waiting_for) {
  switch (event.kind) {
    case Event::Kind::kSignal:
      supervisor.Log(absl::StrCat("received ", strsignal(event.signal), "; stopping the job"));
      break;
    case Event::Kind::kFailed:
      supervisor.Log(absl::StrCat(event.failed, " failed (", event.status.ToString(),
                                  "); stopping the job"));
      break;
    case Event::Kind::kTimeout:
      supervisor.Log(absl::StrCat("timed out waiting for ", waiting_for,
                                  " (cluster.startup_timeout); stopping the job"));
      break;
    case Event::Kind::kReady:
      break;
  }
  const std::vector<std::string> killed = supervisor.StopAll(kStopGrace);
  for (const std::string& name : killed) supervisor.Log(absl::StrCat(name, " needed SIGKILL"));
  switch (event.kind) {
    case Event::Kind::kSignal:
      return 128 + event.signal;
    case Event::Kind::kFailed:
      supervisor.Log(absl::StrCat("job failed: ", event.failed, " ended with ",
                                  event.status.ToString()));
      return kExitFailure;
    case Event::Kind::kTimeout:
      supervisor.Log(absl::StrCat("job failed: timed out waiting for ", waiting_for));
      return kExitUnreachable;
    case Event::Kind::kReady:
      break;
  }
  return kExitFailure;
}

// Stops every process after a launcher-side error and returns the exit code.
int Fail(Supervisor& supervisor, absl::string_view message) {
  supervisor.Log(absl::StrCat("job failed: ", message));
  supervisor.StopAll(kStopGrace);
  return kExitFailure;
}

// Waits for the port file at `path`; `*ports` is set once it is read.
// Returns a ready predicate for Supervisor::RunUntil; a malformed file counts
// as ready with `*error` set.
std::function<bool()> PortFileReady(std::string path, std::optional<DaemonPorts>* ports,
                                    absl::Status* error) {
  return [path = std::move(path), ports, error] {
    if (ports->has_value()) return true;
    absl::StatusOr<std::optional<DaemonPorts>> read = ReadPortFile(path);
    if (!read.ok()) {
      *error = read.status();
      return true;
    }
    *ports = *read;
    return ports->has_value();
  };
}

int Run(const Flags& flags) {
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.job, flags.overrides);
  if (!config.ok()) return BadInput(config.status().message());
  if (!flags.no_workers && !config->has_training) {
    return BadInput(absl::StrCat(flags.job, ": no training: section, so there is nothing for "
                                            "workers to run (use --no-workers to start only "
                                            "the cluster)"));
  }
  const int num_servers = config->cluster.servers;
  const int num_workers = flags.no_workers ? 0 : config->cluster.workers;
  // Workers and servers share this machine's cores. OpenBLAS's idle threads
  // spin (sched_yield) between GEMMs, so a worker with more BLAS threads than
  // its share of cores burns the CPU its servers need while it waits on a
  // pull or push. Unless the user chose, give each process an equal share
  // (children inherit the environment).
  if (num_workers > 0 && std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    const long share = std::max(1L, cores / (num_workers + num_servers));
    setenv("OPENBLAS_NUM_THREADS", std::to_string(share).c_str(), /*overwrite=*/0);
    std::cerr << "[launch] OPENBLAS_NUM_THREADS=" << share << " per worker (" << cores
              << " cores, " << num_workers << " workers, " << num_servers << " servers)\n";
  }

  LaunchPlan plan;
  plan.job_path = std::filesystem::absolute(flags.job).string();
  plan.overrides = flags.overrides;
  plan.worker_flags = flags.worker_flags;
  if (flags.bin_dir.empty()) {
    absl::StatusOr<std::string> own = OwnBinaryDir();
    if (!own.ok()) return BadInput(own.status().message());
    plan.bin_dir = *own;
  } else {
    plan.bin_dir = flags.bin_dir;
  }
  std::vector<std::string> names = {kCoordinatorBinary, kServerBinary};
  if (num_workers > 0) names.push_back(kWorkerBinary);
  std::vector<std::string> binaries;
  for (const std::string& name : names) {
    absl::StatusOr<std::string> path = FindBinary(plan.bin_dir, name);
    if (!path.ok()) return BadInput(path.status().message());
    binaries.push_back(*path);
  }

  bool created_temp = false;
  absl::StatusOr<std::string> workdir = PrepareWorkdir(flags.workdir, &created_temp);
  if (!workdir.ok()) return BadInput(workdir.status().message());
  plan.workdir = *workdir;
  std::optional<TempDirGuard> temp_dir;
  if (created_temp) temp_dir.emplace(plan.workdir);

  absl::StatusOr<std::unique_ptr<Supervisor>> created = Supervisor::Create(STDERR_FILENO);
  if (!created.ok()) return BadInput(created.status().message());
  Supervisor& supervisor = **created;
  supervisor.Log(absl::StrCat("job ", plan.job_path, " (config hash ", config->config_hash,
                              "): 1 coordinator, ", num_servers, " servers, ", num_workers,
                              " workers; work directory ", plan.workdir));
  const absl::Time started = absl::Now();
  const absl::Duration startup = config->cluster.startup_timeout;
  // Where /metrics can be reached: the configured host, or loopback when
  // the daemons listen on every address.
  const std::string& host = config->metrics.host;
  const std::string metrics_host =
      host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" ? "127.0.0.1" : host;
  std::vector<MetricsEndpoint> metrics;

  // 1. The coordinator.
  if (absl::Status s = supervisor.Start(Role::kCoordinator, 0, binaries[0], CoordinatorArgs(plan));
      !s.ok()) {
    return Fail(supervisor, s.message());
  }
  std::optional<DaemonPorts> coordinator_ports;
  absl::Status port_error;
  Event event = supervisor.RunUntil(
      PortFileReady(CoordinatorPortFile(plan), &coordinator_ports, &port_error),
      absl::Now() + startup);
  if (event.kind != Event::Kind::kReady) {
    return Abort(supervisor, event, "the coordinator's port file");
  }
  if (!port_error.ok()) return Fail(supervisor, port_error.message());
  metrics.push_back({"coordinator", MetricsUrl(metrics_host, coordinator_ports->metrics)});

  // 2. The servers, all at once; workers start once every server serves.
  std::vector<std::optional<DaemonPorts>> server_ports(num_servers);
  for (int i = 0; i < num_servers; ++i) {
    if (absl::Status s = supervisor.Start(Role::kServer, i, binaries[1],
                                          ServerArgs(plan, i, coordinator_ports->grpc));
        !s.ok()) {
      return Fail(supervisor, s.message());
    }
  }
  for (int i = 0; i < num_servers; ++i) {
    event = supervisor.RunUntil(PortFileReady(ServerPortFile(plan, i), &server_ports[i],
                                              &port_error),
                                absl::Now() + startup);
    if (event.kind != Event::Kind::kReady) {
      return Abort(supervisor, event, absl::StrCat("server ", i, "'s port file"));
    }
    if (!port_error.ok()) return Fail(supervisor, port_error.message());
    metrics.push_back({MemberName(Role::kServer, i),
                       MetricsUrl(metrics_host, server_ports[i]->metrics)});
  }
  supervisor.Log(absl::StrCat("cluster is up: coordinator on 127.0.0.1:", coordinator_ports->grpc,
                              ", ", num_servers, " servers serving"));

  if (flags.no_workers) {
    for (const MetricsEndpoint& m : metrics) {
      std::printf("metrics %s: %s\n", m.process.c_str(), m.url.c_str());
    }
    std::fflush(stdout);
    supervisor.StopAll(kStopGrace);
    supervisor.Log("stopped the cluster (--no-workers)");
    return kExitOk;
  }

  // 3. The workers. Their /metrics address comes from their start-up log
  // line ("metrics on http://HOST:PORT/metrics"): workers write no port file.
  std::vector<std::string> worker_urls(num_workers);
  for (int i = 0; i < num_workers; ++i) {
    auto observe = [url = &worker_urls[i]](absl::string_view line) {
      const size_t at = line.find("metrics on http://");
      if (!url->empty() || at == absl::string_view::npos) return;
      absl::string_view rest = line.substr(at + std::strlen("metrics on "));
      *url = std::string(rest.substr(0, rest.find_first_of(" \t")));
    };
    if (absl::Status s = supervisor.Start(Role::kWorker, i, binaries[2],
                                          WorkerArgs(plan, i, coordinator_ports->grpc), observe);
        !s.ok()) {
      return Fail(supervisor, s.message());
    }
  }
  event = supervisor.RunUntil([&] { return supervisor.AllWorkersSucceeded(); },
                              absl::InfiniteFuture());
  if (event.kind != Event::Kind::kReady) return Abort(supervisor, event, "the workers");
  const double wall_seconds = absl::ToDoubleSeconds(absl::Now() - started);
  supervisor.Log("all workers finished; stopping the servers and the coordinator");
  for (const std::string& name : supervisor.StopAll(kStopGrace)) {
    supervisor.Log(absl::StrCat(name, " did not stop within ", absl::FormatDuration(kStopGrace),
                                " of SIGTERM and was killed"));
  }

  // 4. The report.
  std::vector<nlohmann::json> summaries;
  for (int i = 0; i < num_workers; ++i) {
    absl::StatusOr<nlohmann::json> summary = ReadWorkerSummary(WorkerSummaryFile(plan, i));
    if (!summary.ok()) {
      return Fail(supervisor, absl::StrCat("worker ", i, ": ", summary.status().message()));
    }
    summaries.push_back(*std::move(summary));
    metrics.push_back({MemberName(Role::kWorker, i),
                       worker_urls[i].empty() ? "(not reported)" : worker_urls[i]});
  }
  LaunchInfo info{plan.job_path, config->config_hash, num_servers, num_workers, wall_seconds,
                  metrics};
  absl::StatusOr<nlohmann::json> report = BuildLaunchSummary(summaries, info);
  if (!report.ok()) return Fail(supervisor, report.status().message());
  for (const std::string& line : FormatReport(*report)) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (!flags.summary.empty()) {
    if (absl::Status s = WriteJsonFile(flags.summary, *report); !s.ok()) {
      return Fail(supervisor, s.message());
    }
    supervisor.Log(absl::StrCat("summary written to ", flags.summary));
  }
  return kExitOk;
}

}  // namespace
}  // namespace cairn::launch

int main(int argc, char** argv) {
  cairn::launch::Flags flags;
  // Everything after the first "--" goes to every worker unchanged.
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      own_argc = i;
      flags.worker_flags.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  CLI::App app{"cairn-launch: runs a whole Cairn job (coordinator, servers, workers) on this "
               "machine from its YAML file."};
  app.add_option("job", flags.job, "Job YAML file")->required();
  app.add_option("--summary", flags.summary,
                 "Write a JSON summary here at the end (accuracy, loss, throughput, per-worker "
                 "summaries)");
  app.add_option("--bin-dir", flags.bin_dir,
                 "Directory holding cairn-coordinator, cairn-server and cairn-worker (default: "
                 "this executable's directory)");
  app.add_option("--workdir", flags.workdir,
                 "Directory for port files and worker summaries, kept afterwards (default: a "
                 "temporary directory, removed at exit)");
  app.add_option("--set", flags.overrides,
                 "Config override key.path=value for every process (repeatable), e.g. --set "
                 "training.epochs=1")
      ->allow_extra_args(false);  // one value per --set, so a later positional stays one
  app.add_flag("--no-workers", flags.no_workers,
               "Start only the coordinator and the servers, print their /metrics URLs once all "
               "serve, and stop them (a smoke test of the cluster)");
  app.footer(
      "Flags after -- are passed to every cairn-worker.\nExit codes: 0 done; 1 a process failed; "
      "2 bad flags, YAML or missing binary; 4 a daemon did not come up within "
      "cluster.startup_timeout; 128+N stopped by signal N.");
  try {
    app.parse(own_argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? cairn::kExitOk : cairn::kExitBadConfig;
  }
  return cairn::launch::Run(flags);
}
