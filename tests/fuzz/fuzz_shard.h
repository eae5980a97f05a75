// The in-process server the shard fuzz targets (push, pull, clock, replica
// chunk) feed their requests into: a Shard holding four small tables, and
// what a target compares before and after a request.
#ifndef CAIRN_TESTS_FUZZ_FUZZ_SHARD_H_
#define CAIRN_TESTS_FUZZ_FUZZ_SHARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/v1/coordinator.pb.h"
#include "cairn/v1/shard.pb.h"
#include "server/shard/rpc/shared_regions.h"
#include "server/shard/shard.h"

namespace cairn::fuzz {

// Four partitions; table ids in this order:
//   0 "w"     dense [3,5], chunk_size 4 (chunks of 4,4,4,3), Adam, BSP, mean, NaN rejected
//   1 "emb"   sparse width 4, AdaGrad, SSP (staleness 1), min_count 2,
//             capacity_rows 6 (evict_to 0.5), NaN rejected
//   2 "b"     dense [5], chunk_size 2, SGD with Nesterov momentum, ASP,
//             bfloat16 on the wire, sum, non-finite allowed
//   3 "emb16" sparse width 3, SGD, BSP, float16 on the wire, sum, NaN rejected
// `replication` copies of each partition.
inline constexpr uint32_t kPartitions = 4;
v1::JobSpec FuzzJob(uint32_t replication = 1);

// Map version 1, ready: server 0 holds every partition (group 0), workers 0
// and 1 live (incarnation 1).
v1::PartitionMap SoloMap();

// Map version `version`, ready, for replica transfers: partition p is in
// group p % 2, server 0 is every group's primary, server 2 joins both
// groups; workers 0 and 1 live (incarnation 1).
v1::PartitionMap JoinMap(uint64_t version);

// A push by `worker` (incarnation 1) under `version` to group `group` at
// `clock`: for each table, the keys given (all of that group), gradient 0.25
// per float in the table's wire dtype. Empty keys leave the table out.
v1::PushRequest MakePush(const v1::JobSpec& job, uint64_t version, uint32_t group,
                         uint32_t worker, uint64_t sequence, int64_t clock,
                         const std::vector<std::vector<Key>>& keys_per_table);

// A clock tick of `worker` (incarnation 1) to `clock` under `version`.
v1::ClockRequest MakeClock(uint64_t version, uint32_t worker, int64_t clock,
                           bool leaving = false);

// A pull by worker 0 (incarnation 1) at `clock` of the given keys per table.
v1::PullRequest MakePull(uint64_t version, int64_t clock,
                         const std::vector<std::vector<Key>>& keys_per_table);

// Keys of group `group` (p % 2 == group) of each table of FuzzJob, a few per
// table: dense chunks whose partition is in the group, sparse ids likewise.
std::vector<std::vector<Key>> GroupKeys(const v1::JobSpec& job, uint32_t group);

// The same-host path as the gRPC handlers see it: a SharedRegions holding
// one 16 KiB region of this process, offered by worker 0 (incarnation 1),
// its values area filled with 0.25f. Created at the first call, kept for the
// process (never written by pushes; pulls may write their answers there).
// An input names it as region 0: RemapRegion adds the real id.
struct FuzzRegion {
  std::unique_ptr<SharedRegion> created;
  SharedRegions regions;
  uint64_t id = 0;
};
FuzzRegion& TheRegion();
inline uint64_t RemapRegion(uint64_t input_region) { return TheRegion().id + input_region; }

// GroupKeys of both groups, ascending per table.
std::vector<std::vector<Key>> AllKeys(const v1::JobSpec& job);

// Every stored value of `shard` as bytes (Shard::Snapshot: each partition's
// encoded rows, sequence floors and, with `clocks`, the worker clocks and the
// iteration boundary), one line each, to compare before and after a
// request; "" when it cannot snapshot.
std::string StateBytes(const Shard& shard, bool clocks = true);

// The first line where two StateBytes differ, before and after, for a
// failure message (escaped, at most 200 characters each).
std::string FirstDifference(const std::string& before, const std::string& after);

}  // namespace cairn::fuzz

#endif  // CAIRN_TESTS_FUZZ_FUZZ_SHARD_H_
