// cairn-server: holds partitions of a job's tables and serves Pull, Push,
// Clock and Stats. Registers with the coordinator, learns the job and the
// partition map from it, renews its lease, and follows map changes.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"
#include "common/coordinator_client.h"
#include "common/daemon.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "server/shard/checkpoint/checkpoint_format.h"
#include "server/shard/checkpoint/job_shapes.h"
#include "server/shard/checkpoint_agent.h"
#include "server/shard/initial_rows.h"
#include "server/shard/rpc/parameter_service.h"
#include "server/shard/replica_transfers.h"
#include "server/shard/rpc/replica_forwarder.h"
#include "server/shard/shard.h"
#include "server/shard/shard_metrics.h"

namespace cairn {
namespace {

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
};

int Run(const Flags& flags) {
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.config, flags.overrides);
  if (!config.ok()) {
    std::cerr << "cairn-server: " << config.status().message() << "\n";
    return kExitBadConfig;
  }
  if (!flags.coordinator.empty()) {
    absl::StatusOr<HostPort> hp = ParseHostPort(flags.coordinator, "--coordinator");
    if (!hp.ok()) {
      std::cerr << "cairn-server: " << hp.status().message() << "\n";
      return kExitBadConfig;
    }
    config->cluster.coordinator = flags.coordinator;
  }
  absl::StatusOr<HostPort> listen = ParseHostPort(flags.listen, "--listen", true);
  if (!listen.ok()) {
    std::cerr << "cairn-server: " << listen.status().message() << "\n";
    return kExitBadConfig;
  }
  const int metrics_port = flags.metrics_port >= 0 ? flags.metrics_port : config->metrics.port;
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server =
      MetricsServer::Start(config->metrics.host, metrics_port, "cairn-server");
  if (!metrics_server.ok()) {
    std::cerr << "cairn-server: " << metrics_server.status().message() << "\n";
    return kExitPortTaken;
  }
  ShardMetrics metrics((*metrics_server)->registry());
  ParameterService service(&metrics, config->rpc.deadline);
  ReplicaForwarder forwarder(config->rpc.max_message_bytes, config->rpc.deadline);
  service.SetForwarder(&forwarder);

  GrpcServerOptions options;
  options.address = flags.listen;
  options.max_message_bytes = config->rpc.max_message_bytes;
  options.services = {&service};
  absl::StatusOr<StartedServer> started = StartGrpcServer(options);
  if (!started.ok()) {
    std::cerr << "cairn-server: " << started.status().message() << "\n";
    return kExitPortTaken;
  }
  const std::string advertise_host = flags.advertise.empty() ? listen->host : flags.advertise;
  // Field case B20: never register an address other hosts cannot dial.
  const std::string coordinator_host =
      ParseHostPort(config->cluster.coordinator, "cluster.coordinator")->host;
  const bool unspecified = advertise_host == "0.0.0.0" || advertise_host == "::";
  if (unspecified || (IsLoopbackOrUnspecified(advertise_host) &&
                      !IsLoopbackOrUnspecified(coordinator_host))) {
    std::cerr << "cairn-server: would advertise " << advertise_host
              << ", which workers on other hosts cannot reach (coordinator at "
              << config->cluster.coordinator
              << "); set --advertise to this host's routable address\n";
    return kExitBadConfig;
  }
  const std::string address = FormatHostPort(advertise_host, started->port);
  LOG_INFO("serving ParameterService on {} (max message {} bytes), /metrics on {}", address,
           config->rpc.max_message_bytes, (*metrics_server)->address());

  CoordinatorClient coordinator(config->cluster.coordinator, config->rpc.max_message_bytes);
  v1::RegisterServerRequest reg;
  reg.set_address(address);
  reg.set_metrics_address((*metrics_server)->address());
  reg.set_requested_id(flags.server_id);
  const absl::Time registering = absl::Now();
  absl::StatusOr<v1::RegisterServerResponse> registered =
      coordinator.RegisterServer(reg, registering + config->cluster.startup_timeout);
  if (!registered.ok()) {
    std::cerr << "cairn-server: " << registered.status().message() << "\n";
    return kExitUnreachable;
  }
  const uint32_t server_id = registered->server_id();
  LOG_INFO("registered as server {} with the coordinator at {}", server_id,
           config->cluster.coordinator);
  const v1::JobSpec& job = registered->job();
  Shard shard(server_id, job, &metrics);
  // Fencing: this server stops serving a quarter of a lease before the
  // coordinator could declare it dead and promote a backup; each renewal
  // moves the deadline on, counted from when the renewal was sent.
  // With one copy no backup can take over, so a server never fences itself
  // (a coordinator outage must not stop the data path).
  const bool fencing = job.replication() > 1;
  const absl::Duration fence = absl::Milliseconds(job.lease_timeout_ms()) * 3 / 4;
  if (fencing) shard.SetLeaseDeadline(registering + fence);
  std::unique_ptr<CheckpointAgent> agent;
  if (!job.checkpoint().dir().empty()) {
    absl::StatusOr<std::vector<checkpoint::TableShape>> shapes = checkpoint::JobTableShapes(job);
    absl::StatusOr<std::unique_ptr<CheckpointAgent>> started_agent =
        shapes.ok() ? CheckpointAgent::Start(
                          {checkpoint::ServerStoreDir(job.checkpoint().dir(), server_id),
                           server_id, job.num_partitions(), *shapes},
                          &coordinator, &metrics)
                    : shapes.status();
    if (!started_agent.ok()) {
      std::cerr << "cairn-server: " << started_agent.status().message() << "\n";
      return kExitBadConfig;
    }
    agent = *std::move(started_agent);
    shard.SetCheckpointSink(job.checkpoint().every_clocks(), [a = agent.get()](ShardSnapshot s) {
      a->Submit(std::move(s));
    });
  }
  ReplicaTransfers transfers(server_id, &shard, &coordinator, config->rpc.max_message_bytes,
                             config->rpc.deadline);
  shard.SetJoinerSink([&transfers](uint32_t group, uint32_t joiner) {
    transfers.SendTo(group, joiner);
  });
  service.SetOnReplicaInstalled([&transfers](uint32_t group) { transfers.ReportReady(group); });
  absl::StatusOr<std::optional<InitialState>> initial = MakeInitialState(job);
  if (!initial.ok()) {
    std::cerr << "cairn-server: " << initial.status().message() << "\n";
    return kExitBadConfig;
  }
  if (initial->has_value()) shard.SetInitialRows((*initial)->loader, (*initial)->start_clock);
  std::unique_ptr<CheckpointPartitionReader> restore_reader;
  if (!job.checkpoint().dir().empty()) {
    restore_reader = std::make_unique<CheckpointPartitionReader>(job.checkpoint().dir());
    shard.SetRestoreLoader([&coordinator, reader = restore_reader.get()](
                               uint64_t record_id, const v1::TableSpec& table,
                               uint32_t partition) -> absl::StatusOr<PartitionRows> {
      ASSIGN_OR_RETURN(v1::ListCheckpointsResponse list,
                       coordinator.ListCheckpoints(absl::Seconds(10)));
      for (const v1::CheckpointRecord& r : list.records()) {
        if (r.id() == record_id) return reader->Read(r, table, partition);
      }
      return absl::NotFoundError(
          absl::StrCat("checkpoint record ", record_id, " is not among the coordinator's"));
    });
  }
  if (absl::Status s = shard.InstallMap(registered->map()); !s.ok()) {
    std::cerr << "cairn-server: " << s.message() << "\n";
    return kExitFailure;
  }
  service.SetShard(&shard);
  if (!flags.port_file.empty()) {
    const int mport = std::stoi((*metrics_server)->address().substr(
        (*metrics_server)->address().rfind(':') + 1));
    if (absl::Status s = WritePortFile(flags.port_file, started->port, mport); !s.ok()) {
      std::cerr << "cairn-server: " << s.message() << "\n";
      return kExitFailure;
    }
  }

  std::atomic<bool> stop{false};
  std::atomic<bool> lost{false};    // the coordinator
  std::atomic<bool> failed{false};  // the first ready map could not be installed
  std::atomic<bool> fenced{false};  // the coordinator declared this server dead
  std::atomic<bool> must_stop{false};
  const absl::Duration heartbeat = absl::Milliseconds(registered->job().heartbeat_interval_ms());
  const absl::Duration lease = absl::Milliseconds(registered->job().lease_timeout_ms());
  const absl::Duration loss_timeout = std::max(absl::Seconds(10), 4 * lease);

  std::thread heartbeats([&] {
    absl::Time last_ok = absl::Now();
    while (!stop.load()) {
      v1::HeartbeatRequest hb;
      hb.set_role(v1::MEMBER_ROLE_SERVER);
      hb.set_id(server_id);
      hb.set_map_version(shard.map_version());
      const absl::Time sent = absl::Now();
      absl::StatusOr<v1::HeartbeatResponse> r = coordinator.Heartbeat(hb, heartbeat);
      if (r.ok()) {
        last_ok = absl::Now();
        if (fencing) shard.SetLeaseDeadline(sent + fence);
      } else if (absl::IsNotFound(r.status())) {
        // Declared dead (its lease ran out): a backup may serve its
        // partitions now. Never serve again; a restart rejoins afresh.
        LOG_ERROR("the coordinator declared server {} dead ({}); exiting", server_id,
                  r.status().message());
        shard.SetLeaseDeadline(absl::InfinitePast());
        fenced.store(true);
        must_stop.store(true);
        return;
      } else if (absl::Now() - last_ok > loss_timeout) {
        LOG_ERROR("lost the coordinator at {}: no heartbeat answered for {}",
                  config->cluster.coordinator, absl::FormatDuration(loss_timeout));
        lost.store(true);
        must_stop.store(true);
        return;
      }
      for (absl::Duration slept; slept < heartbeat && !stop.load();
           slept += absl::Milliseconds(20)) {
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
  });
  std::thread watcher([&] {
    while (!stop.load()) {
      absl::StatusOr<v1::GetPartitionMapResponse> r =
          coordinator.WatchPartitionMap(shard.map_version(), absl::Seconds(1));
      if (!r.ok()) {
        absl::SleepFor(absl::Milliseconds(200));
        continue;
      }
      if (absl::Status s = shard.InstallMap(r->map()); !s.ok()) {
        LOG_ERROR("cannot install partition map version {}: {}", r->map().version(), s.message());
        if (r->map().ready() && shard.map_version() == 0) {  // no state to serve: give up
          failed.store(true);
          must_stop.store(true);
          return;
        }
      }
    }
  });
  std::thread expirer([&] {
    while (!stop.load()) {
      shard.ExpireWaiters(absl::Now());
      absl::SleepFor(absl::Milliseconds(50));
    }
  });

  const int sig = WaitForTermination(&must_stop);
  stop.store(true);
  if (sig != 0) LOG_INFO("signal {}: shutting down", sig);
  shard.Shutdown();  // parked pulls answer UNAVAILABLE now, so Shutdown is quick
  started->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  heartbeats.join();
  watcher.join();
  expirer.join();
  transfers.Stop();
  if (agent != nullptr) agent->Stop();  // finishes the checkpoints already taken
  const int code = failed.load()   ? kExitFailure
                   : fenced.load() ? kExitDeclaredDead
                   : lost.load()   ? kExitLostCoordinator
                                   : kExitOk;
  LOG_INFO("stopped (exit code {})", code);
  ExitNow(code);
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  cairn::TuneAllocator();
  cairn::BlockTerminationSignals();
  cairn::Flags flags;
  CLI::App app{"cairn-server: holds partitions of a Cairn job's tables and serves pull/push."};
  app.add_option("--config", flags.config, "job YAML file")->required();
  app.add_option("--coordinator", flags.coordinator,
                 "coordinator host:port (overrides cluster.coordinator)");
  app.add_option("--listen", flags.listen, "host:port to serve on; port 0 picks a free one")
      ->capture_default_str();
  app.add_option("--advertise", flags.advertise,
                 "host other processes dial (default: the --listen host)");
  app.add_option("--metrics-port", flags.metrics_port, "port of /metrics (overrides metrics.port)");
  app.add_option("--server-id", flags.server_id, "ask for this server id (default: any)");
  app.add_option("--port-file", flags.port_file,
                 "write 'grpc=PORT' and 'metrics=PORT' here once serving");
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->capture_default_str();
  app.add_option("--set", flags.overrides,
                 "config override key.path=value, applied on top of the file (repeatable)")
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  cairn::InitLogging("server", flags.log_level);
  return cairn::Run(flags);
}
