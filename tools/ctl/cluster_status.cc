#include "tools/ctl/cluster_status.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "common/http_get.h"
#include "common/net.h"
#include "common/status_conversion.h"

namespace cairn::ctl {
namespace {

// Status replies are small; a job with many tables and partitions stays far
// below this.
constexpr int64_t kMaxMessageBytes = 64ll << 20;

// The operation `cairn_shard_busy` says holds the server whose /metrics is
// at `metrics_address`, or nullopt (not busy, or no answer).
std::optional<std::string> BusyFromMetrics(const std::string& metrics_address,
                                           absl::Duration timeout) {
  absl::StatusOr<HostPort> where = ParseHostPort(metrics_address, "metrics address");
  if (!where.ok()) return std::nullopt;
  absl::StatusOr<std::string> body = HttpGet(where->host, where->port, "/metrics", timeout);
  if (!body.ok()) return std::nullopt;
  constexpr absl::string_view kPrefix = "cairn_shard_busy{operation=\"";
  for (absl::string_view line : absl::StrSplit(*body, '\n')) {
    if (!absl::ConsumePrefix(&line, kPrefix)) continue;
    const size_t quote = line.find('"');
    if (quote == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(line.substr(line.rfind(' ') + 1)) == "1") {
      return std::string(line.substr(0, quote));
    }
  }
  return std::nullopt;
}

ServerStats AskServer(const v1::Member& server, absl::Duration timeout) {
  ServerStats out;
  out.server_id = server.id();
  out.address = server.address();
  if (server.address().empty()) {
    out.status = absl::FailedPreconditionError(
        absl::StrCat("server ", server.id(), " registered no address"));
    return out;
  }
  auto stub = v1::ParameterService::NewStub(MakeChannel(server.address(), kMaxMessageBytes));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  // The coordinator lists the server alive: a first connection attempt that
  // fails (a loaded host) is tried again until the deadline, rather than
  // reported as the server's error at once.
  context.set_wait_for_ready(true);
  const grpc::Status s = stub->Stats(&context, v1::StatsRequest(), &out.stats);
  if (!s.ok() && !server.metrics_address().empty()) {
    // A long snapshot or load may hold every request thread: its /metrics
    // (served apart) says whether that is why.
    if (std::optional<std::string> busy = BusyFromMetrics(server.metrics_address(), timeout)) {
      out.stats.set_server_id(server.id());
      out.stats.set_busy(*busy);
      return out;
    }
  }
  if (!s.ok()) {
    const absl::Status status = FromGrpcStatus(s);
    std::string why;
    if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) {
      // Killed or cut off moments ago: listed alive until its lease runs out.
      why = absl::StrCat(" (the coordinator still lists it alive, its last heartbeat ",
                         absl::FormatDuration(absl::Milliseconds(server.lease_age_ms())),
                         " ago: a server that stopped is declared dead once its lease, "
                         "cluster.lease_timeout, runs out, and its groups fail over)");
    }
    out.status = absl::Status(status.code(), absl::StrCat("Stats of server ", server.id(), " at ",
                                                          server.address(), ": ",
                                                          status.message(), why));
  }
  return out;
}

}  // namespace


std::vector<TableClocks> SummarizeTables(const std::vector<ServerStats>& servers) {
  // In the order the servers list them (the job's, by table id: a model's
  // ctr.c2 before ctr.c10), each once.
  std::vector<TableClocks> tables;
  std::map<std::string, size_t> index;
  for (const ServerStats& server : servers) {
    if (!server.status.ok()) continue;
    for (const v1::TableStats& t : server.stats.tables()) {
      auto [it, added] = index.try_emplace(t.table(), tables.size());
      if (added) tables.emplace_back();
      TableClocks& out = tables[it->second];
      out.table = t.table();
      ++out.servers;
      out.num_keys += t.primary_keys();
      out.bytes += t.primary_bytes();
      out.held_keys += t.num_keys();
      out.held_bytes += t.bytes();
      out.pending_ids += t.pending_ids();
      out.not_admitted_pushes += t.not_admitted_pushes();
      out.evicted_rows += t.evicted_rows();
      out.expired_rows += t.expired_rows();
      if (t.min_clock() < 0) continue;  // no live worker on that server
      out.min_clock = out.min_clock < 0 ? t.min_clock() : std::min(out.min_clock, t.min_clock());
      out.max_clock = std::max(out.max_clock, t.max_clock());
    }
  }
  return tables;
}

absl::StatusOr<ClusterStatus> FetchClusterStatus(const std::string& coordinator,
                                                 absl::Duration timeout) {
  ClusterStatus status;
  status.coordinator = coordinator;
  CoordinatorClient client(coordinator, kMaxMessageBytes);
  absl::StatusOr<v1::ListMembersResponse> members = client.ListMembers(timeout);
  if (!members.ok()) {
    const absl::StatusCode code = members.status().code();
    if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
      return absl::UnavailableError(absl::StrCat("cannot reach the coordinator at ", coordinator,
                                                 " (deadline ", absl::FormatDuration(timeout),
                                                 "): ", members.status().message()));
    }
    return absl::Status(code, absl::StrCat("coordinator ", coordinator, ": ",
                                           members.status().message()));
  }
  status.membership = *std::move(members);

  // Every live server at once: a slow one costs `timeout`, not n * timeout.
  std::vector<std::future<ServerStats>> pending;
  for (const v1::Member& m : status.membership.members()) {
    if (m.role() != v1::MEMBER_ROLE_SERVER || m.state() != v1::MEMBER_STATE_ALIVE) continue;
    pending.push_back(std::async(std::launch::async, AskServer, m, timeout));
  }
  for (auto& p : pending) status.servers.push_back(p.get());
  std::sort(status.servers.begin(), status.servers.end(),
            [](const ServerStats& a, const ServerStats& b) { return a.server_id < b.server_id; });
  status.tables = SummarizeTables(status.servers);
  return status;
}

}  // namespace cairn::ctl
