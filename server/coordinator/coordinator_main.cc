// cairn-coordinator: membership with leases, the partition map and the
// start-up barrier of one Cairn job. Run `cairn-coordinator --help`.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/config/job_config.h"
#include "common/config/overrides.h"
#include "common/config/security_settings.h"
#include "common/security/transport_security.h"
#include "common/daemon.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "server/coordinator/checkpoint_driver.h"
#include "server/coordinator/checkpoint_registry.h"
#include "server/coordinator/coordinator_disk.h"
#include "server/coordinator/coordinator_metrics.h"
#include "server/coordinator/coordinator_service.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job_end.h"
#include "server/coordinator/lease_expirer.h"
#include "server/coordinator/worker_loss.h"

namespace cairn {
namespace {

struct Flags {
  std::string config_path;
  std::string listen;        // empty: cluster.coordinator
  int metrics_port = -1;     // -1: metrics.port
  std::string port_file;
  std::vector<std::string> overrides;  // --set key.path=value, in order
  std::string log_level = "info";
  bool resume = false;  // --resume: checkpoint.resume=latest
  bool discard_state = false;  // --discard-state
  SecurityFlags security;
};

// Fails the job when the start-up barrier is not passed within
// `startup_timeout` (B12: nobody should wait forever for a member that never
// comes): names the missing ids and fails the job through `job_end`, which
// tells the members that came and ends the main wait.
class StartupWatchdog {
 public:
  // state and job_end must outlive this.
  StartupWatchdog(const CoordinatorState* state, absl::Duration startup_timeout, JobEnd* job_end)
      : thread_([state, startup_timeout, job_end, this] {
          if (state->WaitUntilReady(startup_timeout) || stopping_.load()) return;
          const CoordinatorState::Missing missing = state->MissingMembers();
          job_end->Fail(kExitUnreachable,
                        absl::StrCat("start-up barrier not passed within ",
                                     absl::FormatDuration(startup_timeout),
                                     " (cluster.startup_timeout): missing server ids [",
                                     absl::StrJoin(missing.servers, ", "),
                                     "], missing worker ids [",
                                     absl::StrJoin(missing.workers, ", "), "]"));
        }) {}
  // The caller must have called CoordinatorState::Shutdown(), which ends the wait.
  ~StartupWatchdog() { thread_.join(); }
  void Stopping() { stopping_.store(true); }

 private:
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// At a stop: a job that is over (every worker left or died) or failed
// leaves no state behind, so the next start is a new job; otherwise (a
// graceful restart) the state is written once more, with fresh worker clocks.
void KeepOrForgetState(CoordinatorState* state, int exit_code, const std::string& state_dir) {
  if (state_dir.empty() || state->restoring()) return;
  if (exit_code != kExitOk || state->JobOver()) {
    absl::Status s = state->ForgetStored();
    if (s.ok()) {
      LOG_INFO("the job is {}: removed its coordinator state from {}",
               exit_code == kExitOk ? "over" : "failed", state_dir);
    } else {
      LOG_ERROR("cannot remove the coordinator state: {}", s.message());
    }
    return;
  }
  absl::Status s = state->Persist();
  if (s.ok()) {
    LOG_INFO("coordinator state kept in {}: a coordinator started again resumes this job",
             state_dir);
  } else {
    LOG_ERROR("cannot store the coordinator state: {}", s.message());
  }
}

int Run(const Flags& flags) {
  std::vector<std::string> overrides = flags.overrides;
  if (flags.resume) overrides.push_back("checkpoint.resume=latest");
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.config_path, overrides);
  if (!config.ok()) {
    LOG_ERROR("bad config: {}",
              NameFlagOfOverride(config.status(), "checkpoint.resume=latest", "--resume")
                  .message());
    return kExitBadConfig;
  }
  if (absl::Status s = SetUpTransportSecurity(config->security, flags.security, ProcessEnv(),
                                              Role::kCoordinator);
      !s.ok()) {
    LOG_ERROR("bad security settings: {}", s.message());
    return kExitBadConfig;
  }
  const bool listen_from_flag = !flags.listen.empty();
  absl::StatusOr<HostPort> listen =
      ParseHostPort(listen_from_flag ? flags.listen : config->cluster.coordinator,
                    listen_from_flag ? "--listen" : "cluster.coordinator",
                    /*allow_zero_port=*/true);
  if (!listen.ok()) {
    LOG_ERROR("bad address: {}", listen.status().message());
    return kExitBadConfig;
  }
  // Field case C12: members dial this host and verify it against the
  // certificate (an unspecified listen host says nothing of what they dial).
  if (listen->host != "0.0.0.0" && listen->host != "::") {
    if (absl::Status s = CheckCertificateNames(
            listen->host, listen_from_flag ? "--listen" : "cluster.coordinator");
        !s.ok()) {
      LOG_ERROR("{}", s.message());
      return kExitBadConfig;
    }
  }
  // The effective values: TLS set by --tls* flags or CAIRN_TLS_* variables
  // shows as what this process uses, not as the file's security: section.
  JobConfig shown = *config;
  if (absl::StatusOr<std::optional<TransportSecurityFiles>> tls = ResolveSecurity(
          config->security, flags.security, ProcessEnv(), Role::kCoordinator);
      tls.ok() && tls->has_value()) {
    shown.security.tls = true;
    shown.security.ca_file = (*tls)->ca_file;
    shown.security.cert_file = (*tls)->cert_file;
    shown.security.key_file = (*tls)->key_file;
    shown.security.tokens_file = (*tls)->tokens_file;
  }
  for (absl::string_view line : absl::StrSplit(DescribeConfig(shown), '\n', absl::SkipEmpty())) {
    LOG_INFO("config: {}", line);
  }
  if (!flags.port_file.empty()) std::remove(flags.port_file.c_str());  // no stale ports

  const int metrics_port = flags.metrics_port >= 0 ? flags.metrics_port : config->metrics.port;
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server =
      MetricsServer::Start(config->metrics.host, metrics_port, "coordinator",
                           config->metrics.tls);
  if (!metrics_server.ok()) {
    LOG_ERROR("{}", metrics_server.status().message());
    return metrics_server.status().code() == absl::StatusCode::kUnavailable ? kExitPortTaken
                                                                            : kExitBadConfig;
  }
  CoordinatorMetrics metrics((*metrics_server)->registry());
  MonotonicTimeSource time;  // leases never follow a step of the wall clock
  v1::JobSpec job = ToJobSpec(*config);
  absl::StatusOr<CoordinatorDisk> disk = OpenCoordinatorDisk(*config, flags.discard_state, &job);
  if (!disk.ok()) {
    LOG_ERROR("{}", disk.status().message());
    return kExitBadConfig;
  }
  std::unique_ptr<CheckpointRegistry> registry;
  if (disk->records != nullptr) {
    absl::StatusOr<std::unique_ptr<CheckpointRegistry>> opened =
        CheckpointRegistry::Open(disk->records.get(), job.tables_size(), job.num_partitions(),
                                 config->checkpoint.keep, &metrics);
    if (!opened.ok()) {
      LOG_ERROR("{}", opened.status().message());
      return kExitBadConfig;
    }
    registry = *std::move(opened);
    const std::vector<v1::CheckpointRecord> records = registry->List();
    metrics.EnableCheckpoints(records.empty() ? absl::ToUnixSeconds(absl::Now())
                                              : records.back().unix_millis() / 1000.0);
  }
  CoordinatorState state(job, &time, &metrics, disk->state);
  if (disk->action == StoredStateAction::kRestore) {
    state.Restore(*std::move(disk->stored), config->cluster.state_dir);
  } else if (disk->state != nullptr) {
    LOG_INFO("coordinator state is kept in {}", config->cluster.state_dir);
  } else {
    LOG_INFO("coordinator state is not kept (cluster.state_dir: none): a restarted coordinator "
             "starts a new job");
  }
  if (registry != nullptr) {
    // A group that loses every copy comes back from this job's newest
    // complete checkpoint: one recorded since this start, else the one it
    // resumed from (older records may belong to another timeline).
    const uint64_t start_id = registry->LatestId();
    const v1::CheckpointRecord resumed = state.job().resume_from();
    state.SetCheckpointSource([reg = registry.get(), start_id,
                               resumed]() -> std::optional<v1::CheckpointRecord> {
      std::vector<v1::CheckpointRecord> records = reg->List();
      if (!records.empty() && records.back().id() > start_id) return records.back();
      if (resumed.id() != 0) return resumed;
      return std::nullopt;
    });
  }
  std::unique_ptr<CheckpointDriver> driver;
  if (registry != nullptr) {
    driver = std::make_unique<CheckpointDriver>(&state, registry.get(), &metrics,
                                                registry->LatestId(), state.job().resume_from());
    if (config->checkpoint.every > absl::ZeroDuration()) {
      driver->StartPeriodic(config->checkpoint.every,
                            std::max(absl::Seconds(60), config->checkpoint.every));
    }
  }
  CoordinatorService service(&state, &metrics, registry.get(), driver.get());

  GrpcServerOptions options;
  options.address = FormatHostPort(listen->host, listen->port);
  options.max_message_bytes = job.max_message_bytes() > 0 ? job.max_message_bytes()
                                                          : options.max_message_bytes;
  options.services.push_back(&service);
  absl::StatusOr<StartedServer> server = StartGrpcServer(options);
  if (!server.ok()) {
    LOG_ERROR("{}", server.status().message());
    return kExitPortTaken;
  }
  const absl::Duration expiry_period =
      std::max(absl::Milliseconds(job.heartbeat_interval_ms()) / 2, absl::Milliseconds(10));
  // Set once the job has ended (job_end.h): finished, or failed by its own
  // verdict, a worker loss under on_worker_loss: fail, or the start-up
  // watchdog. Ends the main wait.
  std::atomic<bool> ended{false};
  JobEnd::Options end_options;
  end_options.exit_when_done = config->cluster.exit_when_done;
  end_options.shutdown_grace = config->cluster.shutdown_grace;
  JobEnd job_end(&state, driver.get(), end_options, &ended);
  WorkerLossHandler loss_handler(config->cluster.on_worker_loss);
  LeaseExpirer expirer(&state, expiry_period,
                       [&](const std::vector<MemberRecord>& expired) {
                         if (std::optional<std::string> cause = loss_handler.Handle(expired)) {
                           job_end.Fail(kExitWorkerLost, *cause);
                         }
                       });

  absl::StatusOr<HostPort> metrics_address =
      ParseHostPort((*metrics_server)->address(), "metrics address", /*allow_zero_port=*/true);
  const int bound_metrics_port = metrics_address.ok() ? metrics_address->port : 0;
  LOG_INFO("serving on {} (metrics on {}); waiting for {} servers and {} workers, {} partitions",
           FormatHostPort(listen->host, server->port), (*metrics_server)->url(),
           job.num_servers(), job.num_workers(), job.num_partitions());
  if (!flags.port_file.empty()) {
    absl::Status written = WritePortFile(flags.port_file, server->port, bound_metrics_port);
    if (!written.ok()) {
      LOG_ERROR("{}", written.message());
      server->server->Shutdown();
      return kExitFailure;
    }
  }

  int exit_code = kExitOk;
  {
    std::optional<StartupWatchdog> watchdog;
    if (config->cluster.startup_timeout > absl::ZeroDuration()) {
      watchdog.emplace(&state, config->cluster.startup_timeout, &job_end);
    }
    const int sig = WaitForTermination(&ended);
    if (sig != 0) {
      LOG_INFO("received {}; shutting down", strsignal(sig));
    } else {
      exit_code = job_end.exit_code();
    }
    job_end.Stop();
    if (watchdog) watchdog->Stopping();
    state.Shutdown();  // releases WatchPartitionMap calls and the watchdog
  }
  expirer.Stop();
  if (driver != nullptr) driver->Stop();
  LOG_INFO("{}", loss_handler.SummaryLine(state.Members()));
  // Idle client connections hold Shutdown until its deadline; every call but
  // a parked watch (released above) is short, so half a second is enough.
  server->server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(500)));
  server->server->Wait();
  KeepOrForgetState(&state, exit_code, config->cluster.state_dir);  // no call changes it now
  if (!flags.port_file.empty()) std::remove(flags.port_file.c_str());
  LOG_INFO("stopped (exit code {})", exit_code);
  ExitNow(exit_code);  // skips the /metrics web server's slow stop
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  cairn::TuneDaemonAllocator();
  cairn::DisableMutexDeadlockDetection();
  // Before any thread starts, so every thread inherits the mask;
  // WaitForTermination takes the signals.
  cairn::BlockTerminationSignals();
  cairn::Flags flags;
  CLI::App app{"cairn-coordinator: membership (leases), the partition map and the start-up "
               "barrier of a Cairn job."};
  app.add_option("--config", flags.config_path, "Job YAML file")->required();
  app.add_option("--listen", flags.listen,
                 "host:port of the gRPC service (default: cluster.coordinator; port 0 picks "
                 "a free port)");
  app.add_option("--metrics-port", flags.metrics_port,
                 "Port of /metrics (default: metrics.port; 0 picks a free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--port-file", flags.port_file,
                 "Once serving, write \"grpc=<port>\\nmetrics=<port>\\n\" here atomically "
                 "(removed at start and at a clean exit)");
  app.add_option("--set", flags.overrides,
                 "Config override key.path=value, applied on top of the file (repeatable), "
                 "e.g. --set cluster.lease_timeout=3s");
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_flag("--resume", flags.resume,
               "Resume from the newest complete checkpoint in checkpoint.dir (same as --set "
               "checkpoint.resume=latest)");
  app.add_flag("--discard-state", flags.discard_state,
               "Start a new job even if cluster.state_dir holds a job's coordinator state "
               "(which is dropped; checkpoint records stay). Without it a coordinator resumes "
               "the stored job of the same config and refuses another job's (exit 2)");
  cairn::AddSecurityFlags(&app, &flags.security, cairn::Role::kCoordinator);
  app.footer(
      "Exit codes: 0 the job finished (every worker finished and left; servers stopped) or "
      "SIGTERM/SIGINT; 1 failure, or the final checkpoint failed; 2 bad config or flags, a "
      "checkpoint to resume from that is missing, damaged or does not fit the job, or "
      "cluster.state_dir holding another job's state; 3 address in use; 4 start-up barrier "
      "not passed within cluster.startup_timeout; 6 a worker was lost and "
      "cluster.on_worker_loss is fail; 8 every worker was lost; 9 a replica group lost every "
      "copy and no checkpoint covers it. docs/deploy.md, \"Exit codes\".");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? cairn::kExitOk : cairn::kExitBadConfig;
  }
  cairn::InitLogging("coordinator", flags.log_level);
  return cairn::Run(flags);
}
