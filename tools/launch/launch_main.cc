// cairn-launch: runs a whole Cairn job on this machine from its YAML file:
// one cairn-coordinator, then cluster.servers cairn-server processes, then
// cluster.workers cairn-worker processes, each on free loopback ports (the
// coordinator on --coordinator-port if given, for cairnctl). Every
// line the processes write comes out prefixed with their name; at the end it
// prints the test accuracy and the /metrics URL of every process.
//
//   cairn-launch JOB.yaml [--summary PATH] [--bin-dir DIR] [--workdir DIR]
//                [--coordinator-port PORT] [--set key=value ...] [--no-workers]
//                [--prometheus [--prometheus-keep]]
//                [--deploy-dir DIR] [--plot PATH.svg|PATH.png] [--no-pin-workers]
//                [--tls] [--resume] [--worker-command PROGRAM] [-- extra worker flags]
//
// It writes the Prometheus file_sd targets of every process to
// <workdir>/prometheus/targets/cairn.json beside a copy of the shipped
// scrape config (targets_file.h); --prometheus also runs Prometheus against
// them (prometheus_sidecar.h), and --prometheus-keep keeps it up after the
// job until a signal (job_monitoring.h). On a terminal one combined progress line
// stays below the log (console.h, progress_board.h). Two or more workers
// each run on CPUs of their own unless --no-pin-workers (worker_cpus.h).
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
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/config/job_config.h"
#include "common/config/overrides.h"
#include "common/config/security_settings.h"
#include "common/cpu_affinity.h"
#include "common/daemon.h"
#include "tools/launch/console.h"
#include "tools/launch/job_monitoring.h"
#include "tools/launch/job_report.h"
#include "tools/launch/launch_plan.h"
#include "tools/launch/launch_steps.h"
#include "tools/launch/plot.h"
#include "tools/launch/port_file.h"
#include "tools/launch/progress_board.h"
#include "tools/launch/prometheus_sidecar.h"
#include "tools/launch/job_certificates.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/worker_cpus.h"

namespace cairn::launch {
namespace {

struct Flags {
  std::string job;
  std::string summary;
  std::string bin_dir;
  std::string workdir;
  int coordinator_port = 0;  // 0: a free port
  std::vector<std::string> overrides;
  bool resume = false;
  bool no_workers = false;
  bool prometheus = false;
  bool prometheus_keep = false;
  std::string prometheus_binary = kPrometheusBinary;
  std::string deploy_dir;
  std::string plot;
  bool tls = false;
  bool no_pin_workers = false;
  std::string worker_command;  // instead of cairn-worker (examples/pytorch)
  std::vector<std::string> worker_flags;  // everything after "--"
};

// Checks --plot before anything starts.
absl::Status CheckPlot(const Flags& flags) {
  if (flags.plot.empty()) return absl::OkStatus();
  if (flags.no_workers) return absl::InvalidArgumentError("--plot needs workers (drop --no-workers)");
  if (absl::StatusOr<PlotFormat> f = PlotFormatFor(flags.plot); !f.ok()) return f.status();
  return CheckGnuplotInstalled(kGnuplotBinary);
}

// What `rpc.busy_poll: auto` becomes for the processes of a launched job.
constexpr absl::Duration kLaunchBusyPoll = absl::Milliseconds(2);

int Run(Flags flags) {
  if (flags.resume) flags.overrides.push_back("checkpoint.resume=latest");
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.job, flags.overrides);
  if (!config.ok()) {
    return BadInput(
        NameFlagOfOverride(config.status(), "checkpoint.resume=latest", "--resume").message());
  }
  if (!flags.no_workers && !config->has_training) {
    return BadInput(absl::StrCat(flags.job, ": no training: section, so there is nothing for "
                                            "workers to run (use --no-workers to start only "
                                            "the cluster)"));
  }
  if (absl::Status s = CheckPlot(flags); !s.ok()) return BadInput(s.message());
  absl::StatusOr<std::optional<std::string>> deploy_dir =
      CheckMonitoring({flags.prometheus, flags.prometheus_keep, flags.prometheus_binary,
                       flags.deploy_dir});
  if (!deploy_dir.ok()) return BadInput(deploy_dir.status().message());
  if (config->metrics.tls && !flags.tls && !config->security.tls) {
    const char* env = std::getenv("CAIRN_TLS");
    if (env == nullptr || (std::string(env) != "1" && std::string(env) != "true")) {
      return BadInput(
          "metrics.tls: true serves /metrics with each process's TLS certificate, but TLS is "
          "off: add --tls (the launcher then makes the job's certificates), or set "
          "security.tls and its files (docs/security.md)");
    }
  }
  if (config->metrics.tls && deploy_dir->has_value()) {
    // The scrape config's copy is made to scrape over HTTPS (ScrapeOverHttps).
    if (absl::Status s = CheckScrapeJob(ScrapeConfigIn(**deploy_dir)); !s.ok()) {
      return BadInput(s.message());
    }
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
  if (!config->rpc.busy_poll.has_value()) {
    // `auto`: every process polls before it sleeps (common/busy_poll.h).
    // The machine is the job's, and a polling thread yields to any thread
    // that needs its CPU: every job shape measured on 2 CPUs, up to 2
    // servers + 2 workers, stepped faster (docs/benchmarks.md, "Polling
    // before sleeping").
    plan.overrides.push_back(
        absl::StrCat("rpc.busy_poll=", FormatDurationForConfig(kLaunchBusyPoll)));
    std::cerr << "[launch] rpc.busy_poll: auto -> " << FormatDurationForConfig(kLaunchBusyPoll)
              << " (polls before it sleeps; --set rpc.busy_poll=0s: off)\n";
  }
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
    if (name == kWorkerBinary && !flags.worker_command.empty()) {
      const std::filesystem::path command = std::filesystem::absolute(flags.worker_command);
      path = FindBinary(command.parent_path().string(), command.filename().string());
    }
    if (!path.ok()) return BadInput(path.status().message());
    binaries.push_back(*path);
  }

  bool created_temp = false;
  absl::StatusOr<std::string> workdir = PrepareWorkdir(flags.workdir, &created_temp);
  if (!workdir.ok()) return BadInput(workdir.status().message());
  plan.workdir = *workdir;
  plan.coordinator_port = flags.coordinator_port;
  std::optional<TempDirGuard> temp_dir;
  if (created_temp) temp_dir.emplace(plan.workdir);
  if (flags.tls) {
    absl::StatusOr<std::vector<std::string>> tls = MakeJobCertificates(plan.bin_dir, plan.workdir);
    if (!tls.ok()) return BadInput(tls.status().message());
    plan.daemon_flags = *std::move(tls);
  }
  // With /metrics over HTTPS, Prometheus checks the daemons' certificates
  // against the job's CA bundle: the one made above, else the one the
  // daemons are given (security:, or the environment).
  std::string metrics_ca_file;
  if (config->metrics.tls) {
    auto tls_ca = std::find(plan.daemon_flags.begin(), plan.daemon_flags.end(), "--tls-ca");
    if (tls_ca != plan.daemon_flags.end() && std::next(tls_ca) != plan.daemon_flags.end()) {
      metrics_ca_file = *std::next(tls_ca);
    } else {
      absl::StatusOr<std::optional<TransportSecurityFiles>> files =
          ResolveSecurity(config->security, SecurityFlags{}, ProcessEnv(),
                          ::cairn::Role::kCoordinator);
      if (!files.ok()) return BadInput(files.status().message());
      if (files->has_value()) metrics_ca_file = (*files)->ca_file;
    }
  }

  // On a terminal, the workers' progress lines become one live line (they
  // report every second for it); elsewhere they pass through as they are.
  const bool live = num_workers > 0 && Console::IsLiveTerminal(STDERR_FILENO);
  if (live) plan.worker_flags.insert(plan.worker_flags.begin(), {"--progress-interval", "1"});
  absl::StatusOr<std::unique_ptr<Supervisor>> created = Supervisor::Create(STDERR_FILENO, live);
  if (!created.ok()) return BadInput(created.status().message());
  Supervisor& supervisor = **created;
  // The hash every process of the job logs: the file with the overrides
  // they are all given, the launcher's own (rpc.busy_poll) included.
  const std::string config_hash = ConfigHash(config->source, plan.overrides);
  supervisor.Log(absl::StrCat("job ", plan.job_path, " (config hash ", config_hash,
                              "): 1 coordinator, ", num_servers, " servers, ", num_workers,
                              " workers; work directory ", plan.workdir));
  const absl::Time started = absl::Now();
  const absl::Duration startup = config->cluster.startup_timeout;

  // 0. Prometheus's files, and Prometheus itself with --prometheus.
  JobMonitoring monitoring(&supervisor, plan.workdir);
  if (absl::Status s = monitoring.WriteFiles(*deploy_dir, metrics_ca_file); !s.ok()) {
    return Fail(supervisor, s.message());
  }
  if (flags.prometheus) {
    absl::StatusOr<Event> ready =
        monitoring.StartPrometheus(flags.prometheus_binary, absl::Now() + startup,
                                   flags.prometheus_keep);
    if (!ready.ok()) return Fail(supervisor, ready.status().message());
    if (ready->kind != Event::Kind::kReady) return Abort(supervisor, *ready, "Prometheus");
  }
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
  metrics.push_back(
      {"coordinator", MetricsUrl(metrics_host, coordinator_ports->metrics, config->metrics.tls)});
  monitoring.AddTarget("coordinator", metrics.back().url);

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
                       MetricsUrl(metrics_host, server_ports[i]->metrics, config->metrics.tls)});
    monitoring.AddTarget("server", metrics.back().url);
  }
  supervisor.Log(absl::StrCat("cluster is up: coordinator on 127.0.0.1:", coordinator_ports->grpc,
                              ", ", num_servers, " servers serving (cairnctl --coordinator "
                              "127.0.0.1:", coordinator_ports->grpc, " status)"));

  if (flags.no_workers) {
    for (const MetricsEndpoint& m : metrics) {
      supervisor.Print(absl::StrCat("metrics ", m.process, ": ", m.url));
    }
    supervisor.StopAll(kStopGrace, flags.prometheus_keep);
    supervisor.Log("stopped the cluster (--no-workers)");
    if (flags.prometheus_keep) monitoring.KeepServing(kStopGrace);
    return kExitOk;
  }

  // 3. The workers. Their /metrics address comes from their start-up log
  // line ("metrics on http://HOST:PORT/metrics"): workers write no port file.
  // Their progress lines feed the live line (and are not printed then).
  std::vector<std::string> worker_urls(num_workers);
  const std::vector<int> allowed = AllowedCpus();
  const std::vector<std::vector<int>> worker_cpus =
      flags.no_pin_workers ? std::vector<std::vector<int>>()
                           : SplitCpusAmongWorkers(allowed, num_workers);
  if (!worker_cpus.empty()) {
    std::vector<std::string> each;
    for (size_t i = 0; i < worker_cpus.size(); ++i) {
      each.push_back(absl::StrCat("worker ", i, " on ", FormatCpuList(worker_cpus[i])));
    }
    supervisor.Log(absl::StrCat("workers pinned to CPUs of their own: ", absl::StrJoin(each, ", "),
                                "; the servers and the coordinator may use any of ",
                                FormatCpuList(allowed), " (--no-pin-workers: leave them all "
                                "to the scheduler)"));
  }
  ProgressBoard board;
  for (int i = 0; i < num_workers; ++i) {
    auto observe = [&, i](absl::string_view line) {
      if (std::optional<ProgressLine> progress = ParseProgressLine(line)) {
        board.Update(i, *progress);
        supervisor.SetStatus(board.Render(Console::TerminalWidth(STDERR_FILENO) - 1));
        return !live || progress->event != "progress";
      }
      size_t at = line.find("metrics on http://");
      if (at == absl::string_view::npos) at = line.find("metrics on https://");
      if (!worker_urls[i].empty() || at == absl::string_view::npos) return true;
      absl::string_view rest = line.substr(at + std::strlen("metrics on "));
      worker_urls[i] = std::string(rest.substr(0, rest.find_first_of(" \t")));
      monitoring.AddTarget("worker", worker_urls[i]);
      return true;
    };
    const std::vector<int> cpus = worker_cpus.empty() ? std::vector<int>() : worker_cpus[i];
    if (absl::Status s = supervisor.Start(Role::kWorker, i, binaries[2],
                                          WorkerArgs(plan, i, coordinator_ports->grpc), observe,
                                          cpus);
        !s.ok()) {
      return Fail(supervisor, s.message());
    }
  }
  // Under `on_worker_loss: continue` the coordinator drops a lost worker
  // within a lease and the others go on; so does the launcher.
  supervisor.set_worker_failures_tolerated(config->cluster.on_worker_loss ==
                                           WorkerLossPolicy::kContinue);
  event = supervisor.RunUntil([&] { return supervisor.AllWorkersEnded(); },
                              absl::InfiniteFuture());
  if (event.kind != Event::Kind::kReady) return Abort(supervisor, event, "the workers");
  const double wall_seconds = absl::ToDoubleSeconds(absl::Now() - started);
  const std::vector<int> lost_workers = supervisor.FailedWorkers();
  supervisor.ClearStatus();
  const std::string finished =
      lost_workers.empty() ? std::string("all workers finished")
                           : absl::StrCat("the workers left finished (", lost_workers.size(),
                                          " of ", num_workers, " lost)");
  if (config->cluster.exit_when_done) {
    // The coordinator ends the job itself (a final checkpoint, then the
    // servers, then itself); stop whatever is still up after its grace.
    // (A worker may exit after it left the job, once the job has ended.)
    supervisor.Log(absl::StrCat(finished, supervisor.AllDaemonsEnded()
                                              ? "; the servers and the coordinator ended the job"
                                              : "; the servers and the coordinator end the job"));
    event = supervisor.RunUntil([&] { return supervisor.AllDaemonsEnded(); },
                                absl::Now() + config->cluster.shutdown_grace + absl::Seconds(10));
    if (event.kind == Event::Kind::kFailed || event.kind == Event::Kind::kSignal) {
      return Abort(supervisor, event, "the end of the job");
    }
    if (event.kind == Event::Kind::kTimeout) {
      supervisor.Log("the servers and the coordinator did not exit by themselves; stopping them");
    }
  } else {
    supervisor.Log(absl::StrCat(finished, "; stopping the servers and the coordinator"));
  }
  for (const std::string& name : supervisor.StopAll(kStopGrace, flags.prometheus_keep)) {
    supervisor.Log(absl::StrCat(name, " did not stop within ", absl::FormatDuration(kStopGrace),
                                " of SIGTERM and was killed"));
  }

  // 4. The report.
  std::vector<nlohmann::json> summaries;
  for (int i = 0; i < num_workers; ++i) {
    if (std::find(lost_workers.begin(), lost_workers.end(), i) != lost_workers.end()) {
      metrics.push_back({MemberName(Role::kWorker, i),
                         worker_urls[i].empty() ? "(not reported)" : worker_urls[i]});
      continue;  // a lost worker wrote no summary
    }
    absl::StatusOr<nlohmann::json> summary = ReadWorkerSummary(WorkerSummaryFile(plan, i));
    if (!summary.ok()) {
      return Fail(supervisor, absl::StrCat("worker ", i, ": ", summary.status().message()));
    }
    summaries.push_back(*std::move(summary));
    metrics.push_back({MemberName(Role::kWorker, i),
                       worker_urls[i].empty() ? "(not reported)" : worker_urls[i]});
  }
  LaunchInfo info{plan.job_path, config_hash, num_servers, num_workers, wall_seconds,
                  metrics, lost_workers};
  absl::StatusOr<nlohmann::json> report = BuildLaunchSummary(summaries, info);
  if (!report.ok()) return Fail(supervisor, report.status().message());
  for (const std::string& line : FormatReport(*report)) supervisor.Print(line);
  if (!flags.summary.empty()) {
    if (absl::Status s = WriteJsonFile(flags.summary, *report); !s.ok()) {
      return Fail(supervisor, s.message());
    }
    supervisor.Log(absl::StrCat("summary written to ", flags.summary));
  }
  if (!flags.plot.empty()) {
    PlotOptions plot;
    plot.output = flags.plot;
    plot.work_dir = (std::filesystem::path(plan.workdir) / "plot").string();
    plot.title = absl::StrFormat("%s: %d servers, %d workers; test accuracy %.4f",
                                 std::filesystem::path(plan.job_path).filename().string(),
                                 num_servers, num_workers, (*report)["test_accuracy"].get<double>());
    if (absl::Status s = WritePlot(summaries, plot); !s.ok()) {
      return Fail(supervisor, absl::StrCat("--plot: ", s.message()));
    }
    supervisor.Log(absl::StrCat("training curves written to ", flags.plot));
  }
  if (flags.prometheus_keep) monitoring.KeepServing(kStopGrace);
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
  app.add_option("--coordinator-port", flags.coordinator_port,
                 "Port the coordinator listens on, at 127.0.0.1, for cairnctl (default: a free "
                 "port, printed once the cluster is up); the other processes take free ports")
      ->check(CLI::Range(0, 65535));
  app.add_option("--set", flags.overrides,
                 "Config override key.path=value for every process (repeatable), e.g. --set "
                 "training.epochs=1")
      ->allow_extra_args(false);  // one value per --set, so a later positional stays one
  app.add_flag("--tls", flags.tls,
               "mutual TLS on every channel, with a CA and certificates made for this job in "
               "the work directory (cairn-certs; docs/security.md)");
  app.add_option("--worker-command", flags.worker_command,
                 "run this program as each worker instead of cairn-worker, with the same "
                 "arguments (--config, --coordinator, --worker-id, --summary, ...; "
                 "examples/pytorch)");
  app.add_flag("--resume", flags.resume,
               "resume from the newest complete checkpoint in checkpoint.dir (same as --set "
               "checkpoint.resume=latest)");
  app.add_flag("--no-workers", flags.no_workers,
               "Start only the coordinator and the servers, print their /metrics URLs once all "
               "serve, and stop them (a smoke test of the cluster)");
  app.add_flag("--no-pin-workers", flags.no_pin_workers,
               "Leave every worker free to run on any CPU (by default two or more workers each "
               "run on CPUs of their own, when there are as many CPUs as workers; pass this "
               "when other jobs share the machine's CPUs)");
  app.add_flag("--prometheus", flags.prometheus,
               "Also run Prometheus (Debian's /usr/bin/prometheus) against the job's targets on "
               "a free loopback port, print its URL, and stop it with the job");
  app.add_flag("--prometheus-keep", flags.prometheus_keep,
               "With --prometheus: once the job has ended and its report is printed, keep "
               "Prometheus serving what it scraped until Ctrl-C or SIGTERM (exit code still the "
               "job's)");
  app.add_option("--prometheus-binary", flags.prometheus_binary,
                 "The Prometheus server to run with --prometheus")
      ->capture_default_str();
  app.add_option("--deploy-dir", flags.deploy_dir,
                 "Directory holding prometheus/prometheus-local.yml and prometheus/alerts.yml, "
                 "copied beside the targets (default: the deploy/ folder of the source tree "
                 "cairn-launch was built from)");
  app.add_option("--plot", flags.plot,
                 "Draw loss, test accuracy and examples/s per epoch with gnuplot into this "
                 ".svg or .png file at the end");
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
