// cairnctl: the operator's command line for a running Cairn job.
//
//   cairnctl --coordinator HOST:PORT status [--json]
//   cairnctl --coordinator HOST:PORT checkpoint [--wait 60s]
//   cairnctl --coordinator HOST:PORT checkpoints
//   cairnctl export --format safetensors (--from DIR | --config JOB.yaml [--set k=v]) PATH
//
// `export` reads the servers' checkpoint stores directly (no running job
// needed): DIR is checkpoint.dir (a store, or a folder of stores). With
// --config the checkpoint's tables must be the job file's (else exit 2).
//
// Exit codes: 0 done; 1 failed (the coordinator answered with an error);
// 2 bad flags; 3 status printed, but a live server did not answer its Stats
// call; 4 the coordinator is unreachable (nothing printed on stdout).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/config/job_config.h"
#include "common/config/security_settings.h"
#include "common/security/transport_security.h"
#include "common/log.h"
#include "common/config/units.h"
#include "common/coordinator_client.h"
#include "common/net.h"
#include "server/checkpoint/job_shapes.h"
#include "server/checkpoint/safetensors_export.h"
#include "tools/ctl/cluster_status.h"
#include "tools/ctl/status_format.h"

namespace cairn::ctl {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPartial = 3;
constexpr int kExitUnreachable = 4;

struct GlobalFlags {
  std::string coordinator = "127.0.0.1:7070";
  std::string timeout = "5s";
  std::string config;  // a job file: its cluster.coordinator and security:
};

struct StatusFlags {
  bool json = false;
};

struct ExportFlags {
  std::string format = "safetensors";
  std::string from;
  std::string config;
  std::vector<std::string> overrides;  // --set, applied to --config
  std::string path;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "cairnctl: %s\n", message.c_str());
  return code;
}

// A coordinator that cannot be reached: exit 4, and what to check when the
// cause is TLS, which gRPC reports on this side only as a closed socket.
int FailUnreachable(const std::string& message) {
  return Fail(kExitUnreachable,
              message + (TransportSecurityInstalled()
                             ? " (with TLS: is --tls-ca the job's CA, and this certificate "
                               "one it issued? docs/security.md)"
                             : " (if the job runs with TLS: --tls, --tls-ca, --tls-cert, "
                               "--tls-key; docs/security.md)"));
}

int RunExport(const ExportFlags& flags) {
  std::string from = flags.from;
  // With --config, the job file's tables: the checkpoint must hold those.
  std::optional<std::vector<checkpoint::TableShape>> expected;
  if (from.empty()) {
    if (flags.config.empty()) return Fail(kExitUsage, "export: give --from DIR or --config FILE");
    absl::StatusOr<JobConfig> config = LoadJobConfig(flags.config, flags.overrides);
    if (!config.ok()) return Fail(kExitUsage, std::string(config.status().message()));
    if (config->checkpoint.dir.empty()) {
      return Fail(kExitUsage, flags.config + ": checkpoint.dir is not set");
    }
    from = config->checkpoint.dir;
    const v1::JobSpec job = ToJobSpec(*config);
    // A file that only says where the stores are (no tables, no model)
    // has no tables to compare.
    if (job.tables_size() > 0) {
      absl::StatusOr<std::vector<checkpoint::TableShape>> shapes =
          checkpoint::JobTableShapes(job);
      if (!shapes.ok()) return Fail(kExitUsage, std::string(shapes.status().message()));
      expected = std::move(*shapes);
    }
  }
  absl::StatusOr<std::vector<std::string>> stores = checkpoint::FindStores(from);
  if (!stores.ok()) {
    // No checkpoint where the flags say is bad input, as for the coordinator.
    const bool bad_input = stores.status().code() == absl::StatusCode::kNotFound ||
                           stores.status().code() == absl::StatusCode::kInvalidArgument;
    return Fail(bad_input ? kExitUsage : kExitFailed, std::string(stores.status().message()));
  }
  absl::StatusOr<checkpoint::ExportSummary> summary = checkpoint::ExportSafetensors(
      *stores, flags.path, expected.has_value() ? &*expected : nullptr);
  if (!summary.ok()) {
    if (absl::IsInvalidArgument(summary.status())) {
      std::string message(summary.status().message());
      if (expected.has_value() && message.rfind("table ", 0) == 0) {
        absl::StrAppend(&message, " (", flags.config, " with its --set overrides is not the job "
                        "that wrote ", from, "; give the job's own file, or --from DIR to "
                        "export whatever the stores hold)");
      }
      return Fail(kExitUsage, "export: " + message);
    }
    return Fail(kExitFailed, std::string(summary.status().message()));
  }
  std::cout << "exported clock " << summary->clock << ": " << summary->tensors << " tensors, "
            << summary->bytes << " bytes to " << flags.path << "\n";
  return 0;
}

int64_t RecordBytes(const cairn::v1::CheckpointRecord& r) {
  int64_t bytes = 0;
  for (const auto& p : r.partitions()) bytes += static_cast<int64_t>(p.bytes());
  return bytes;
}

// "16 table partitions (2 tables x 8 partitions)": a record holds each
// table's partitions, so its count is the job's partitions times its tables.
std::string DescribePartitions(const cairn::v1::CheckpointRecord& r) {
  absl::flat_hash_set<uint32_t> tables;
  absl::flat_hash_set<uint32_t> partitions;
  for (const auto& p : r.partitions()) {
    tables.insert(p.table_id());
    partitions.insert(p.partition());
  }
  return absl::StrCat(r.partitions_size(), " table partitions (", tables.size(),
                      tables.size() == 1 ? " table" : " tables", " x ", partitions.size(),
                      partitions.size() == 1 ? " partition)" : " partitions)");
}

// Takes a checkpoint now (the coordinator's two-phase protocol) and waits
// for it to complete.
int RunCheckpoint(const GlobalFlags& global, const std::string& wait) {
  absl::StatusOr<HostPort> address = ParseHostPort(global.coordinator, "--coordinator");
  if (!address.ok()) return Fail(kExitUsage, std::string(address.status().message()));
  absl::StatusOr<absl::Duration> timeout = ParseDuration(wait);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return Fail(kExitUsage, "--wait " + wait + ": expected a positive duration such as 60s");
  }
  CoordinatorClient client(global.coordinator, 64 << 20);
  v1::CheckpointRequest request;
  request.set_timeout_ms(absl::ToInt64Milliseconds(*timeout));
  absl::StatusOr<v1::CheckpointResponse> r =
      client.Checkpoint(request, *timeout + absl::Seconds(5));
  if (!r.ok()) {
    const bool unreachable = r.status().code() == absl::StatusCode::kUnavailable;
    const std::string message = "checkpoint: " + std::string(r.status().message());
    return unreachable ? FailUnreachable(message) : Fail(kExitFailed, message);
  }
  std::cout << "checkpoint complete at clock " << r->record().clock() << ": record "
            << r->record().id() << ", " << DescribePartitions(r->record()) << ", "
            << RecordBytes(r->record()) << " bytes\n";
  if (r->earlier()) {
    std::cout << "(record " << r->record().id() << " was taken earlier at this clock: no "
              << "iteration has ended since, so nothing new was written)\n";
  }
  return 0;
}

// Lists the complete checkpoints the coordinator recorded.
int RunCheckpoints(const GlobalFlags& global) {
  absl::StatusOr<absl::Duration> timeout = ParseDuration(global.timeout);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return Fail(kExitUsage, "--timeout " + global.timeout + ": expected a positive duration");
  }
  CoordinatorClient client(global.coordinator, 64 << 20);
  absl::StatusOr<v1::ListCheckpointsResponse> r = client.ListCheckpoints(*timeout);
  if (!r.ok()) {
    const bool unreachable = r.status().code() == absl::StatusCode::kUnavailable;
    const std::string message(r.status().message());
    return unreachable ? FailUnreachable(message) : Fail(kExitFailed, message);
  }
  std::vector<std::vector<std::string>> rows = {
      {"RECORD", "CLOCK", "TABLE PARTITIONS", "BYTES", "COMPLETED (UTC)"}};
  for (const v1::CheckpointRecord& rec : r->records()) {
    rows.push_back({absl::StrCat(rec.id()), absl::StrCat(rec.clock()),
                    absl::StrCat(rec.partitions_size()), absl::StrCat(RecordBytes(rec)),
                    absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                                     absl::FromUnixMillis(rec.unix_millis()),
                                     absl::UTCTimeZone())});
  }
  std::cout << Columns(rows);
  return 0;
}

int RunStatus(const GlobalFlags& global, const StatusFlags& flags) {
  absl::StatusOr<HostPort> address = ParseHostPort(global.coordinator, "--coordinator");
  if (!address.ok()) return Fail(kExitUsage, std::string(address.status().message()));
  absl::StatusOr<absl::Duration> timeout = ParseDuration(global.timeout);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return Fail(kExitUsage, "--timeout " + global.timeout +
                                ": expected a positive duration such as 5s or 500ms");
  }
  absl::StatusOr<ClusterStatus> status = FetchClusterStatus(global.coordinator, *timeout);
  if (!status.ok()) {
    const bool unreachable = status.status().code() == absl::StatusCode::kUnavailable;
    const std::string message(status.status().message());
    return unreachable ? FailUnreachable(message) : Fail(kExitFailed, message);
  }
  if (flags.json) {
    std::cout << StatusToJson(*status).dump(2) << "\n";
  } else {
    std::cout << StatusToText(*status);
  }
  std::cout.flush();
  for (const ServerStats& s : status->servers) {
    if (!s.status.ok()) return kExitPartial;
  }
  return 0;
}

}  // namespace
}  // namespace cairn::ctl

int main(int argc, char** argv) {
  using namespace cairn::ctl;
  GlobalFlags global;
  StatusFlags status_flags;
  CLI::App app{"cairnctl: inspect a running Cairn job and its checkpoints"};
  app.footer(
      "Exit codes: 0 done, 1 failed, 2 bad flags or config, or no checkpoint where --from or "
      "checkpoint.dir says, 3 a live server did not answer, 4 coordinator unreachable.\n"
      "Environment (a flag wins): CAIRN_COORDINATOR; with TLS, CAIRN_TLS=1, CAIRN_TLS_CA_FILE, "
      "CAIRN_TLS_CERT_FILE, CAIRN_TLS_KEY_FILE and CAIRN_TOKEN_FILE (docs/security.md).");
  app.require_subcommand(1);
  app.add_option("--coordinator", global.coordinator, "the coordinator's host:port")
      ->envname("CAIRN_COORDINATOR")
      ->capture_default_str();
  app.add_option("--timeout", global.timeout, "deadline of each call (e.g. 5s, 500ms)")
      ->capture_default_str();
  CLI::Option* coordinator_flag = app.get_option("--coordinator");
  app.add_option("--config", global.config,
                 "the job's YAML: cluster.coordinator (unless --coordinator or "
                 "CAIRN_COORDINATOR says) and its security: section, {role} read as admin");
  cairn::SecurityFlags security;
  cairn::AddSecurityFlags(&app, &security, cairn::Role::kAdmin);

  CLI::App* status = app.add_subcommand(
      "status",
      "members (role, state, lease age), the partition map, each table's min and max clock "
      "over the servers, its keys and bytes (each key once) and how many copies the servers "
      "hold");
  status->add_flag("--json", status_flags.json, "print one JSON object (for scripts)");

  std::string checkpoint_wait = "60s";
  CLI::App* checkpoint_cmd = app.add_subcommand(
      "checkpoint", "take a checkpoint now and wait until every partition is in");
  checkpoint_cmd->add_option("--wait", checkpoint_wait, "how long to wait for it to complete")
      ->capture_default_str();
  CLI::App* checkpoints_cmd =
      app.add_subcommand("checkpoints", "list the complete checkpoints the coordinator recorded");

  ExportFlags export_flags;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "write the newest complete checkpoint as a file other tools read");
  export_cmd->add_option("--format", export_flags.format, "output format")
      ->check(CLI::IsMember({"safetensors"}))
      ->capture_default_str();
  export_cmd->add_option("--from", export_flags.from,
                         "checkpoint directory (a server's store, or a folder of stores)");
  export_cmd->add_option("--config", export_flags.config,
                         "job YAML: its checkpoint.dir, and its tables, which the checkpoint "
                         "must hold (names, shapes; exit 2 naming the first that differs)");
  export_cmd->add_option("--set", export_flags.overrides,
                         "config override key.path=value applied to --config (repeatable), as "
                         "the job's processes were given it, e.g. --set checkpoint.dir=DIR");
  export_cmd->add_option("path", export_flags.path, "output file")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  cairn::InitLogging("cairnctl", "warn");  // stderr; stdout carries the answers
  cairn::SecurityConfig security_yaml;
  if (!global.config.empty()) {
    absl::StatusOr<cairn::JobConfig> job = cairn::LoadJobConfig(global.config);
    if (!job.ok()) {
      std::cerr << "cairnctl: --config: " << job.status().message() << "\n";
      return kExitUsage;
    }
    security_yaml = job->security;
    if (coordinator_flag->count() == 0 && std::getenv("CAIRN_COORDINATOR") == nullptr) {
      global.coordinator = job->cluster.coordinator;
    }
    if (export_flags.config.empty()) export_flags.config = global.config;
  }
  if (absl::Status s = cairn::SetUpTransportSecurity(security_yaml, security,
                                                     cairn::ProcessEnv(), cairn::Role::kAdmin);
      !s.ok()) {
    std::cerr << "cairnctl: " << s.message() << "\n";
    return kExitUsage;
  }
  if (status->parsed()) return RunStatus(global, status_flags);
  if (export_cmd->parsed()) return RunExport(export_flags);
  if (checkpoint_cmd->parsed()) return RunCheckpoint(global, checkpoint_wait);
  if (checkpoints_cmd->parsed()) return RunCheckpoints(global);
  return kExitUsage;
}
