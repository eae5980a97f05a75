// Which checkpoint a restore (or an export) loads from a set of servers'
// stores: the newest clock at which the stores together hold every partition
// of every table. A checkpoint some server finished and another did not (a
// crash during a coordinated checkpoint) is skipped, never loaded in part.
#ifndef CAIRN_SERVER_CHECKPOINT_RESTORE_PLAN_H_
#define CAIRN_SERVER_CHECKPOINT_RESTORE_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "server/checkpoint/checkpoint_reader.h"

namespace cairn::checkpoint {

// One store's manifest at the chosen clock. `reader` is borrowed.
struct RestoreSource {
  const CheckpointReader* reader = nullptr;
  Manifest manifest;
};

// The stores' manifests at the newest clock whose checkpoints cover every
// (table, partition) of their tables (a store without a checkpoint at that
// clock is left out). Errors: NotFound when no store holds a checkpoint;
// FailedPrecondition when the stores disagree on tables or partition count
// at a clock, or when no clock is complete, naming the newest clock and its
// missing "table/partition" pairs. Reads manifests only.
absl::StatusOr<std::vector<RestoreSource>> PlanRestore(
    const std::vector<const CheckpointReader*>& readers);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_RESTORE_PLAN_H_
