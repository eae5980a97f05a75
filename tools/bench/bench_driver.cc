#include "tools/bench/bench_driver.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config/job_config.h"
#include "common/security/transport_security.h"
#include "common/status_macros.h"
#include "tools/bench/bench_cluster.h"
#include "tools/bench/bench_process.h"
#include "tools/bench/bench_reference.h"
#include "worker/client/client.h"

namespace cairn::bench {
namespace {

constexpr absl::Duration kConnectTimeout = absl::Seconds(30);

// Times one group; page faults counted here and in `server_pid`, and the
// CPU time of both.
absl::StatusOr<Row> TimeRow(const DriverOptions& options, const CaseGroup& group,
                            CaseRunner* runner) {
  Row row{options.method, group.operation, runner->value_bytes(), group.rows, {}};
  const pid_t server = options.server_pid;
  auto sample = [server]() -> absl::StatusOr<Counters> {
    Counters c;
    ASSIGN_OR_RETURN(c.caller_faults, MinorFaults(getpid()));
    ASSIGN_OR_RETURN(c.server_faults, MinorFaults(server));
    ASSIGN_OR_RETURN(c.server_cpu_seconds, CpuSeconds(server));
    ASSIGN_OR_RETURN(c.caller_cpu_seconds, CpuSeconds(getpid()));
    return c;
  };
  absl::StatusOr<Timing> timed = TimeCase(runner->Step(options.method), options.timing, sample);
  RETURN_IF_ERROR(Annotate(timed.status(), row.Name()));
  row.timing = *std::move(timed);
  if (IsCairnMethod(options.method) && !group.push) {
    RETURN_IF_ERROR(Annotate(runner->CheckPulledValues(), row.Name()));
  }
  return row;
}

}  // namespace

absl::StatusOr<std::vector<Row>> RunDriver(const DriverOptions& options) {
  std::unique_ptr<Client> client;
  std::unique_ptr<ReferenceClient> reference;
  if (IsTlsMethod(options.method)) {
    RETURN_IF_ERROR(InstallTransportSecurity({.ca_file = options.tls_dir + "/ca.pem",
                                              .cert_file = options.tls_dir + "/worker.pem",
                                              .key_file = options.tls_dir + "/worker.key"}));
  }
  if (IsCairnMethod(options.method)) {
    ClientOptions client_options;
    client_options.coordinator = options.target;
    client_options.worker_id = 0;
    client_options.connect_timeout = kConnectTimeout;
    client_options.shared_memory = UsesSharedMemory(options.method);
    if (IsSlotMethod(options.method)) client_options.busy_poll = kSlotBusyPoll;
    if (options.requests_in_flight >= 0) {
      client_options.requests_in_flight = options.requests_in_flight;
    }
    ASSIGN_OR_RETURN(client, Client::Connect(client_options));
    if (UsesSharedMemory(options.method)) {
      // The server accepts the region in the background: measure from then.
      const absl::Time until = absl::Now() + kConnectTimeout;
      while (client->Stats().shared_memory_regions == 0 && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      if (client->Stats().shared_memory_regions == 0) {
        return absl::FailedPreconditionError(
            "the server did not accept a shared region (see its log): no Cairn-shm rows");
      }
    }
  } else if (options.method == "memcpy") {
    // Nothing to connect to: the step copies the values in this process.
  } else {
    reference = std::make_unique<ReferenceClient>(options.target, kBenchMaxMessageBytes);
    RETURN_IF_ERROR(reference->WaitReady(kConnectTimeout));
  }

  // The tables as the daemons read them (chunk sizes filled in by the parser).
  ASSIGN_OR_RETURN(JobConfig job,
                   ParseJobConfig(BenchJobYaml(), "cairn-bench job"));
  std::vector<std::unique_ptr<CaseRunner>> runners;
  for (const CaseGroup& group : options.groups) {
    auto table = std::find_if(job.tables.begin(), job.tables.end(),
                              [&](const v1::TableSpec& t) { return t.name() == group.table; });
    if (table == job.tables.end()) {
      return absl::NotFoundError(absl::StrCat("the bench job has no table ", group.table));
    }
    runners.push_back(
        std::make_unique<CaseRunner>(group, *table, client.get(), reference.get()));
    RETURN_IF_ERROR(runners.back()->Prepare(IsLentMethod(options.method)));
  }
  // Priming: every case once before any is timed, so the process has seen
  // this workload's largest buffers (the steady state of a training loop).
  for (int round = 0; round < options.prime_rounds; ++round) {
    for (const auto& runner : runners) {
      RETURN_IF_ERROR(Annotate(runner->Step(options.method)(),
                               absl::StrCat("priming ", options.method, " ",
                                            runner->operation())));
    }
  }
  std::vector<Row> rows;
  for (size_t g = 0; g < options.groups.size(); ++g) {
    std::cerr << absl::StrFormat("[%s %d/%d] %s ... ", options.method, g + 1,
                                 options.groups.size(), options.groups[g].operation)
              << std::flush;
    ASSIGN_OR_RETURN(Row row, TimeRow(options, options.groups[g], runners[g].get()));
    std::cerr << absl::StrFormat("%.0f MB/s, p50 %.3f ms, faults/iter %.0f / %.0f\n",
                                 row.MegabytesPerSecond(), row.timing.Quantile(0.5) * 1e3,
                                 row.FaultsPerIteration(row.timing.counters.caller_faults),
                                 row.FaultsPerIteration(row.timing.counters.server_faults));
    rows.push_back(std::move(row));
  }
  runners.clear();
  if (UsesSharedMemory(options.method) && client->Stats().shared_memory_requests == 0) {
    return absl::InternalError(
        absl::StrCat(options.method, ": no request went through the shared region"));
  }
  if (IsLentMethod(options.method) && client->Stats().shared_memory_in_place == 0) {
    return absl::InternalError(
        absl::StrCat(options.method, ": no request was read or answered in place"));
  }
  if (IsSlotMethod(options.method) && client->Stats().slot_calls == 0) {
    return absl::InternalError(absl::StrCat(
        options.method, ": no call went through a call slot (does the server poll? its log "
        "says \"call slots polled\" when it does)"));
  }
  if (client != nullptr) RETURN_IF_ERROR(Annotate(client->Finish(), "leaving the job"));
  return rows;
}

}  // namespace cairn::bench
