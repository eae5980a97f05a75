#include "worker/client/router.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/partitioning.h"

namespace cairn {

absl::StatusOr<Router> Router::Create(const v1::PartitionMap& map) {
  Router r;
  r.version_ = map.version();
  r.num_partitions_ = map.num_partitions();
  if (r.num_partitions_ == 0 || map.assignments_size() != static_cast<int>(r.num_partitions_)) {
    return absl::InvalidArgumentError(absl::StrCat("partition map version ", map.version(),
                                                   " assigns ", map.assignments_size(), " of ",
                                                   map.num_partitions(), " partitions"));
  }
  r.primary_.assign(r.num_partitions_, 0);
  r.group_.assign(r.num_partitions_, 0);
  for (const v1::PartitionAssignment& a : map.assignments()) {
    if (a.partition() >= r.num_partitions_) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition map assigns partition ", a.partition(), " of ",
                       r.num_partitions_));
    }
    r.primary_[a.partition()] = a.primary();
    r.group_[a.partition()] = a.group();
    auto [it, added] = r.group_primary_.emplace(a.group(), a.primary());
    if (!added && it->second != a.primary()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partition map version ", map.version(), " gives replica group ", a.group(),
          " two primaries (", it->second, " and ", a.primary(), ")"));
    }
  }
  for (const auto& [group, primary] : r.group_primary_) r.groups_.push_back(group);
  r.group_index_.resize(r.num_partitions_);
  for (uint32_t p = 0; p < r.num_partitions_; ++p) {
    r.group_index_[p] = static_cast<uint32_t>(
        std::lower_bound(r.groups_.begin(), r.groups_.end(), r.group_[p]) - r.groups_.begin());
  }
  return r;
}

std::vector<uint32_t> Router::Servers() const {
  std::set<uint32_t> s(primary_.begin(), primary_.end());
  return std::vector<uint32_t>(s.begin(), s.end());
}

std::map<uint32_t, std::vector<Key>> Router::RouteDense(uint64_t num_chunks,
                                                        uint32_t offset) const {
  std::map<uint32_t, std::vector<Key>> out;
  if (num_chunks < num_partitions_) {
    // Fewer chunks than partitions (a model's small tables, every step):
    // each chunk's owner, in chunk order, so each group's keys come out
    // ascending, instead of a look at every partition's (mostly empty) range.
    for (Key c = 0; c < num_chunks; ++c) {
      out[group_[DensePartition(c, num_chunks, num_partitions_, offset)]].push_back(c);
    }
    return out;
  }
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    const KeyRange range = DensePartitionRange(num_chunks, num_partitions_, p, offset);
    if (range.size() == 0) continue;
    std::vector<Key>& keys = out[group_[p]];
    for (Key k = range.begin; k < range.end; ++k) keys.push_back(k);
  }
  for (auto& [server, keys] : out) std::sort(keys.begin(), keys.end());
  return out;
}

std::map<uint32_t, std::vector<uint32_t>> Router::RouteSparse(const Key* keys, size_t n) const {
  std::map<uint32_t, std::vector<uint32_t>> out;
  if (groups_.size() == 1) {  // one group holds every partition: no key hashed
    if (n == 0) return out;
    std::vector<uint32_t>& all = out[groups_[0]];
    all.resize(n);
    std::iota(all.begin(), all.end(), uint32_t{0});
    return out;
  }
  // Gathered per group index (a vector, not a tree lookup per key), then
  // handed out by group.
  std::vector<std::vector<uint32_t>> by_index(groups_.size());
  for (std::vector<uint32_t>& v : by_index) v.reserve(n / groups_.size() + 16);
  for (size_t i = 0; i < n; ++i) {
    by_index[group_index_[SparsePartition(keys[i], num_partitions_)]].push_back(
        static_cast<uint32_t>(i));
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!by_index[g].empty()) out.emplace(groups_[g], std::move(by_index[g]));
  }
  return out;
}

}  // namespace cairn
