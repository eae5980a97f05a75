// Routes a table's keys to the replica groups that hold them under one
// partition map (PartitionAssignment.group); a group's requests go to its
// primary. Requests never mix groups: push sequence numbers are counted per
// (worker, group), so a push retried after a failover, to the group's new
// primary, keeps its identity.
//
// Immutable after construction; safe to share.
#ifndef CAIRN_WORKER_CLIENT_ROUTER_H_
#define CAIRN_WORKER_CLIENT_ROUTER_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"

namespace cairn {

class Router {
 public:
  // InvalidArgument when `map` does not cover every partition.
  static absl::StatusOr<Router> Create(const v1::PartitionMap& map);

  uint64_t version() const { return version_; }
  uint32_t num_partitions() const { return num_partitions_; }
  // Primary server of partition p.
  uint32_t Primary(uint32_t p) const { return primary_[p]; }
  // Primary server of replica group g (a group of the map).
  uint32_t GroupPrimary(uint32_t g) const { return group_primary_.at(g); }
  bool HasGroup(uint32_t g) const { return group_primary_.count(g) > 0; }
  // Replica groups of the map.
  size_t num_groups() const { return group_primary_.size(); }
  // Server ids with at least one partition.
  std::vector<uint32_t> Servers() const;

  // Dense table of `num_chunks` chunks whose ranges are rotated by `offset`
  // partitions (TableSpec.partition_offset): group -> its chunk keys, ascending.
  std::map<uint32_t, std::vector<Key>> RouteDense(uint64_t num_chunks, uint32_t offset = 0) const;
  // Sparse table: group -> indices into `keys` of the keys it holds.
  std::map<uint32_t, std::vector<uint32_t>> RouteSparse(const Key* keys, size_t n) const;

 private:
  uint64_t version_ = 0;
  uint32_t num_partitions_ = 0;
  std::vector<uint32_t> primary_;
  std::vector<uint32_t> group_;                 // partition -> group
  std::map<uint32_t, uint32_t> group_primary_;  // group -> primary server
  std::vector<uint32_t> groups_;                // the map's groups, ascending
  std::vector<uint32_t> group_index_;           // partition -> its group's index in groups_
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_ROUTER_H_
