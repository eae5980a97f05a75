// cairn-server: holds partitions of a job's tables and serves Pull, Push,
// Clock and Stats. Registers with the coordinator, learns the job and the
// partition map from it, renews its lease, and follows map changes. Declared
// dead by the coordinator (a cut longer than its lease), it drops what it
// held and registers again, empty (server/shard/incarnation.h).
#include <grpcpp/grpcpp.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"
#include "common/config/security_settings.h"
#include "common/config/units.h"
#include "common/security/transport_security.h"
#include "common/coordinator_client.h"
#include "common/daemon.h"
#include "common/completion_loop.h"
#include "common/grpc_util.h"
#include "common/health_service.h"
#include "common/identity.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "server/shard/incarnation.h"
#include "server/shard/rpc/parameter_service.h"
#include "server/shard/rpc/replica_forwarder.h"
#include "server/shard/shard_metrics.h"

namespace cairn {
namespace {

// How long the coordinator's host name may take to appear in DNS.
constexpr absl::Duration kResolveTimeout = absl::Seconds(10);

struct Flags {
  std::string config;
  std::string coordinator;
  std::string listen = "127.0.0.1:0";
  std::string advertise;
  int metrics_port = -1;
  int server_id = -1;
  std::string port_file;
  std::string log_level = "info";
  std::vector<std::string> overrides;  // --set key.path=value, in order
  std::string on_declared_dead = "rejoin";
  std::string cold_dir;  // empty: $TMPDIR/cairn-cold-<pid>
  std::string cold_memory = "64MiB";
  SecurityFlags security;
};

int Run(const Flags& flags) {
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.config, flags.overrides);
  if (!config.ok()) {
    std::cerr << "cairn-server: " << config.status().message() << "\n";
    return kExitBadConfig;
  }
  const absl::StatusOr<int64_t> cold_memory = ParseSize(flags.cold_memory);
  if (!cold_memory.ok() || *cold_memory < (4 << 20)) {
    std::cerr << "cairn-server: --cold-memory " << flags.cold_memory << ": "
              << (cold_memory.ok() ? std::string("below the least, 4MiB")
                                   : std::string(cold_memory.status().message()))
              << "\n";
    return kExitBadConfig;
  }
  const EnvLookup env = ProcessEnv();
  absl::StatusOr<Sourced> coordinator_address =
      ResolveCoordinator(flags.coordinator, config->cluster.coordinator, env);
  if (!coordinator_address.ok()) {
    std::cerr << "cairn-server: " << coordinator_address.status().message() << "\n";
    return kExitBadConfig;
  }
  config->cluster.coordinator = coordinator_address->value;
  if (absl::Status s = SetUpTransportSecurity(config->security, flags.security, env, Role::kServer);
      !s.ok()) {
    std::cerr << "cairn-server: " << s.message() << "\n";
    return kExitBadConfig;
  }
  absl::StatusOr<ResolvedIndex> index =
      ResolveIndex("server", flags.server_id, "--server-id", config->cluster.servers, env);
  if (!index.ok()) {
    std::cerr << "cairn-server: " << index.status().message() << "\n";
    return kExitBadConfig;
  }
  if (!index->source.empty()) LOG_INFO("server index {} from {}", index->index, index->source);
  absl::Status resolvable;
  {
    StopWhileWaiting stop("while the coordinator's name does not resolve");
    resolvable = WaitUntilResolvable(config->cluster.coordinator, coordinator_address->source,
                                     kResolveTimeout);
  }
  if (absl::Status s = resolvable; !s.ok()) {
    std::cerr << "cairn-server: " << s.message() << "\n";
    return kExitUnreachable;
  }
  absl::StatusOr<HostPort> listen = ParseHostPort(flags.listen, "--listen", true);
  if (!listen.ok()) {
    std::cerr << "cairn-server: " << listen.status().message() << "\n";
    return kExitBadConfig;
  }
  const int metrics_port = flags.metrics_port >= 0 ? flags.metrics_port : config->metrics.port;
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server =
      MetricsServer::Start(config->metrics.host, metrics_port, "cairn-server",
                           config->metrics.tls);
  if (!metrics_server.ok()) {
    std::cerr << "cairn-server: " << metrics_server.status().message() << "\n";
    return metrics_server.status().code() == absl::StatusCode::kUnavailable ? kExitPortTaken
                                                                            : kExitBadConfig;
  }
  ShardMetrics metrics((*metrics_server)->registry());
  const std::string advertise_host =
      ResolveAdvertiseHost(flags.advertise, listen->host, env).value;
  // Field case B20: never register an address other hosts cannot dial.
  const std::string coordinator_host =
      ParseHostPort(config->cluster.coordinator, "cluster.coordinator")->host;
  const bool unspecified = advertise_host == "0.0.0.0" || advertise_host == "::";
  if (unspecified || (IsLoopbackOrUnspecified(advertise_host) &&
                      !IsLoopbackOrUnspecified(coordinator_host))) {
    std::cerr << "cairn-server: would advertise " << advertise_host
              << ", which workers on other hosts cannot reach (coordinator at "
              << config->cluster.coordinator
              << "); set --advertise (or CAIRN_ADVERTISE_HOST) to this host's routable address\n";
    return kExitBadConfig;
  }
  // Field case C12: under TLS, workers verify this name against the certificate.
  if (absl::Status s = CheckCertificateNames(
          advertise_host, "--advertise, CAIRN_ADVERTISE_HOST, else the --listen host");
      !s.ok()) {
    std::cerr << "cairn-server: " << s.message() << "\n";
    return kExitBadConfig;
  }
  ParameterService service(&metrics, config->rpc.deadline);
  HealthService health({v1::ParameterService::service_full_name()});

  GrpcServerOptions options;
  options.address = flags.listen;
  options.max_message_bytes = config->rpc.max_message_bytes;
  options.services = {&service, &health};
  // The loop's thread (rpc.server_threads) serves every call and completes
  // this process's calls that wait (the map watch, forwarded pushes); no
  // callback API anywhere, so no other thread polls gRPC while they are in
  // flight (common/completion_loop.h).
  std::unique_ptr<grpc::ServerCompletionQueue> completion_queue;
  options.completion_queue = &completion_queue;
  options.default_health_service = false;
  absl::StatusOr<StartedServer> started = StartGrpcServer(options);
  if (!started.ok()) {
    std::cerr << "cairn-server: " << started.status().message() << "\n";
    return kExitPortTaken;
  }
  CompletionLoop loop(std::move(completion_queue));
  ReplicaForwarder forwarder(&loop, config->rpc.max_message_bytes, config->rpc.deadline,
                             config->cluster.lease_timeout);
  service.SetForwarder(&forwarder);
  service.AnswerPushesWhenAccepted(config->rpc.push_ack == "accepted");
  service.Serve(&loop);
  health.Serve(&loop);  // NOT_SERVING until registered and serving its shard
  // `auto` left unresolved (not started by cairn-launch): off.
  const absl::Duration busy_poll = config->rpc.busy_poll.value_or(absl::ZeroDuration());
  // A polling server with one serving thread also polls the call slots of
  // its same-host workers' regions (docs/shared-memory.md, "Calls through
  // the region"): their pushes then skip gRPC while it polls.
  const bool call_slots = busy_poll > absl::ZeroDuration() && config->rpc.server_threads == 1 &&
                          config->rpc.shared_memory && config->rpc.call_slots;
  if (call_slots) {
    loop.StartPolling(busy_poll, service.ServeCallSlots());
  } else {
    loop.Start(config->rpc.server_threads, busy_poll);
  }
  const std::string address = FormatHostPort(advertise_host, started->port);
  LOG_INFO("serving ParameterService on {} on {} thread{} (max message {} bytes, busy polling "
           "{}{}), /metrics on {}",
           address, config->rpc.server_threads, config->rpc.server_threads == 1 ? "" : "s",
           config->rpc.max_message_bytes,
           busy_poll > absl::ZeroDuration() ? absl::FormatDuration(busy_poll) : "off",
           call_slots ? ", call slots polled" : "", (*metrics_server)->url());

  CoordinatorClient coordinator(config->cluster.coordinator, config->rpc.max_message_bytes,
                                config->cluster.lease_timeout, &loop);
  v1::RegisterServerRequest reg;
  reg.set_address(address);
  reg.set_metrics_address(DialableAddress((*metrics_server)->address(), advertise_host));
  reg.set_requested_id(index->index);
  std::string cold_dir = flags.cold_dir;
  if (cold_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    cold_dir = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/cairn-cold-", getpid());
  }
  const Incarnation::Context context{&*config, &coordinator, &metrics,
                                     &service,  cold_dir,     static_cast<uint64_t>(*cold_memory)};
  std::atomic<bool> must_stop{false};
  int code = kExitOk;
  for (bool first = true;; first = false) {
    const absl::Time registering = absl::Now();  // the registration's RPC deadline counts from here
    const absl::Time lease_start = MonotonicNow();  // and the lease from here
    // Registration retries an unreachable coordinator for up to the start-up
    // timeout; a stop asked for meanwhile ends the process at once (it holds
    // nothing yet), as it would after.
    LOG_INFO("registering with the coordinator at {}; waiting up to {} "
             "(cluster.startup_timeout) for it",
             config->cluster.coordinator, absl::FormatDuration(config->cluster.startup_timeout));
    absl::StatusOr<v1::RegisterServerResponse> registered;
    {
      StopWhileWaiting stop("before registering");
      registered = coordinator.RegisterServer(reg, registering + config->cluster.startup_timeout);
    }
    if (!registered.ok()) {
      std::cerr << "cairn-server: " << registered.status().message() << "\n";
      code = absl::IsAlreadyExists(registered.status())       ? kExitIndexTaken
             : absl::IsInvalidArgument(registered.status()) ||
                     absl::IsPermissionDenied(registered.status()) ||
                     absl::IsUnauthenticated(registered.status())
                 ? kExitBadConfig  // a certificate of another role: no retry helps
             : absl::IsFailedPrecondition(registered.status()) ? kExitJobFailed
                                                               : kExitUnreachable;
      break;
    }
    LOG_INFO("registered as server {} with the coordinator at {}", registered->server_id(),
             config->cluster.coordinator);
    if (const std::string differs = ConfigHashMismatch(
            absl::StrCat("server ", registered->server_id()), config->source, config->overrides,
            registered->job().config_hash());
        !differs.empty()) {
      LOG_WARN("{}", differs);
    }
    absl::StatusOr<std::unique_ptr<Incarnation>> incarnation =
        Incarnation::Create(context, *registered, lease_start);
    if (!incarnation.ok()) {
      std::cerr << "cairn-server: " << incarnation.status().message() << "\n";
      code = kExitBadConfig;
      break;
    }
    if (absl::Status s = (*incarnation)->Begin(&must_stop); !s.ok()) {
      std::cerr << "cairn-server: " << s.message() << "\n";
      code = kExitFailure;
      break;
    }
    health.SetServing(true);
    if (first && !flags.port_file.empty()) {
      const int mport = std::stoi((*metrics_server)->address().substr(
          (*metrics_server)->address().rfind(':') + 1));
      if (absl::Status s = WritePortFile(flags.port_file, started->port, mport); !s.ok()) {
        std::cerr << "cairn-server: " << s.message() << "\n";
        code = kExitFailure;
        break;
      }
    }
    const int sig = WaitForTermination(&must_stop);
    health.SetServing(false);  // draining
    if (sig != 0) LOG_INFO("signal {}: shutting down", sig);
    absl::StatusOr<IncarnationEnd> end = (*incarnation)->Stop(config->cluster.shutdown_grace);
    if (!end.ok()) {
      LOG_ERROR("{}", end.status().message());
      code = kExitFailure;
      break;
    }
    if (*end == IncarnationEnd::kDeclaredDead && flags.on_declared_dead == "rejoin" &&
        sig == 0) {
      // Whatever it held may be behind a promoted backup: it went with the
      // incarnation. Register again, empty, under a new id, so that no map
      // can name this process for a group it held before.
      LOG_WARN("server {} dropped every value it held and registers again, empty, under a new "
               "id, to back up the replica groups the coordinator gives it",
               (*incarnation)->server_id());
      metrics.Rejoined();
      reg.set_requested_id(-1);
      must_stop.store(false);
      continue;
    }
    if (*end == IncarnationEnd::kJobFinished || *end == IncarnationEnd::kJobFailed) {
      // Tell the coordinator at once rather than by a lease running out: it
      // exits once every server has left.
      v1::LeaveRequest leave;
      leave.set_role(v1::MEMBER_ROLE_SERVER);
      leave.set_id((*incarnation)->server_id());
      if (absl::Status s = coordinator.Leave(leave, absl::Seconds(5)); !s.ok()) {
        LOG_WARN("leaving the job: {}", s.ToString());
      }
    }
    code = *end == IncarnationEnd::kFailed          ? kExitFailure
           : *end == IncarnationEnd::kDeclaredDead    ? kExitDeclaredDead
           : *end == IncarnationEnd::kLostCoordinator ? kExitLostCoordinator
           : *end == IncarnationEnd::kJobFailed       ? kExitJobFailed
                                                      : kExitOk;
    break;
  }
  health.CancelWatches();  // so that Shutdown need not wait for them
  started->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // The loop is left running: a call that outlived the server's shutdown
  // (a forward to a slow backup) may still complete on it and start its
  // answer, which a shut-down queue would refuse. The process ends now.
  if (flags.cold_dir.empty()) {  // ours: the cold tiers of every incarnation
    std::error_code ignored;
    std::filesystem::remove_all(cold_dir, ignored);
  }
  LOG_INFO("stopped (exit code {})", code);
  ExitNow(code);
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  cairn::TuneDaemonAllocator();
  cairn::DisableMutexDeadlockDetection();
  cairn::BlockTerminationSignals();
  cairn::Flags flags;
  CLI::App app{"cairn-server: holds partitions of a Cairn job's tables and serves pull/push."};
  app.add_option("--config", flags.config, "job YAML file")->required();
  app.add_option("--coordinator", flags.coordinator,
                 "coordinator host:port (default: $CAIRN_COORDINATOR, else cluster.coordinator)");
  app.add_option("--listen", flags.listen, "host:port to serve on; port 0 picks a free one")
      ->capture_default_str();
  app.add_option("--advertise", flags.advertise,
                 "host other processes dial (default: $CAIRN_ADVERTISE_HOST, else the --listen "
                 "host)");
  app.add_option("--metrics-port", flags.metrics_port, "port of /metrics (overrides metrics.port)");
  app.add_option("--server-id", flags.server_id,
                 "ask for this server id (default: $CAIRN_INDEX, $JOB_COMPLETION_INDEX, the "
                 "StatefulSet ordinal, $SLURM_PROCID - $CAIRN_INDEX_OFFSET, else any; "
                 "docs/deploy.md)");
  app.add_option("--port-file", flags.port_file,
                 "write 'grpc=PORT' and 'metrics=PORT' here once serving");
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->capture_default_str();
  app.add_option("--on-declared-dead", flags.on_declared_dead,
                 "when the coordinator declares this server dead (a lease that ran out): "
                 "'rejoin' drops every value held and registers again, empty; 'exit' ends "
                 "the process with code 7, for a supervisor to restart")
      ->check(CLI::IsMember({"rejoin", "exit"}))
      ->capture_default_str();
  app.add_option("--cold-dir", flags.cold_dir,
                 "where tables with cold_tier keep their evicted rows (RocksDB, one store per "
                 "incarnation, deleted when it ends; default $TMPDIR/cairn-cold-<pid>)");
  app.add_option("--cold-memory", flags.cold_memory,
                 "RocksDB's memory for the cold tier (block cache, index and filter blocks and "
                 "memtables together), e.g. 64MiB or 1GiB; at least 4MiB")
      ->capture_default_str();
  app.add_option("--set", flags.overrides,
                 "config override key.path=value, applied on top of the file (repeatable)")
      ->allow_extra_args(false);
  cairn::AddSecurityFlags(&app, &flags.security, cairn::Role::kServer);
  app.footer(
      "Exit codes: 0 the job finished (the coordinator said so) or SIGTERM/SIGINT; 1 failure; "
      "2 bad flags, config or index; 3 port in use; 4 coordinator unreachable or its name "
      "does not resolve; 5 coordinator lost for too long; 7 declared dead under "
      "--on-declared-dead exit; 10 the coordinator ended the job as failed; 11 the index is "
      "held by a live server. docs/deploy.md, \"Exit codes\".");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? cairn::kExitOk : cairn::kExitBadConfig;  // bad flags: permanent
  }
  cairn::InitLogging("server", flags.log_level);
  return cairn::Run(flags);
}
