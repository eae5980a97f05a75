// What `cairnctl status` shows, gathered from a running job: the members and
// partition map from the coordinator (ListMembers), and each live server's
// tables and clocks from its ParameterService.Stats.
#ifndef CAIRN_TOOLS_CTL_CLUSTER_STATUS_H_
#define CAIRN_TOOLS_CTL_CLUSTER_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"
#include "cairn/v1/shard.pb.h"

namespace cairn::ctl {

// One server's answer to Stats, or why there is none.
struct ServerStats {
  uint32_t server_id = 0;
  std::string address;   // its gRPC address, as the coordinator lists it
  absl::Status status;   // OK, or the error of the Stats call
  v1::StatsResponse stats;  // valid when status is OK
};

// One table's clocks over every server that answered.
struct TableClocks {
  std::string table;
  int64_t min_clock = -1;  // lowest min clock of the servers; -1: no live worker
  int64_t max_clock = -1;  // highest max clock of the servers; -1: no live worker
  // Keys (chunks or embedding rows) and value bytes, each counted once: the
  // partitions each server is primary of, summed over servers.
  uint64_t num_keys = 0;
  uint64_t bytes = 0;
  // The same over every copy (primaries' and backups'): with replication r
  // and every group whole, r times num_keys and bytes.
  uint64_t held_keys = 0;
  uint64_t held_bytes = 0;
  // Sparse tables, summed over servers, each copy counting its own (every
  // replica of a group admits, evicts and expires the same rows): ids
  // waiting for admission (min_count), pushes of such ids dropped, rows
  // evicted (capacity_rows), rows deleted past their time-to-live
  // (ttl_clocks).
  uint64_t pending_ids = 0;
  uint64_t not_admitted_pushes = 0;
  uint64_t evicted_rows = 0;
  uint64_t expired_rows = 0;
  int servers = 0;         // servers that reported the table
};

struct ClusterStatus {
  std::string coordinator;             // the address asked
  v1::ListMembersResponse membership;  // members (any state) and the map
  std::vector<ServerStats> servers;    // one per ALIVE server, by id
  std::vector<TableClocks> tables;     // in the job's order (table id)
};

// Asks the coordinator at `coordinator` (host:port) for its members and map,
// then every ALIVE server for its Stats, each call with `timeout`.
// Errors: Unavailable naming the address when the coordinator cannot be
// reached or does not answer within `timeout` (the caller's exit code 4);
// other coordinator errors as returned. A server that fails its Stats call
// does not fail the whole: its ServerStats carries the error, or, when its
// /metrics shows it busy with a long snapshot or load (cairn_shard_busy),
// OK with stats.busy naming the operation (its request threads may all be
// waiting for it).
absl::StatusOr<ClusterStatus> FetchClusterStatus(const std::string& coordinator,
                                                 absl::Duration timeout);

// Per-table clocks over the servers whose Stats succeeded (pure; in the
// order the servers list the tables, the job's table-id order). A server's min clock of -1 (no live worker) is not counted.
std::vector<TableClocks> SummarizeTables(const std::vector<ServerStats>& servers);


}  // namespace cairn::ctl

#endif  // CAIRN_TOOLS_CTL_CLUSTER_STATUS_H_
