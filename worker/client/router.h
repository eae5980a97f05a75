// Routes a table's keys to the servers that hold them under one partition
// map, and cuts each server's share into requests of bounded size.
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
  // Server ids with at least one partition.
  std::vector<uint32_t> Servers() const;

  // Dense table: server -> its chunk keys, ascending.
  std::map<uint32_t, std::vector<Key>> RouteDense(uint64_t num_chunks) const;
  // Sparse table: server -> indices into `keys` of the keys it holds.
  std::map<uint32_t, std::vector<uint32_t>> RouteSparse(const Key* keys, size_t n) const;

 private:
  uint64_t version_ = 0;
  uint32_t num_partitions_ = 0;
  std::vector<uint32_t> primary_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_ROUTER_H_
