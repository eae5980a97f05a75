// The shapes a job's tables have in a checkpoint (optimizer slots included),
// shared by the servers that write checkpoints and the coordinator that
// checks a checkpoint against the job before a resume.
#ifndef CAIRN_SERVER_CHECKPOINT_JOB_SHAPES_H_
#define CAIRN_SERVER_CHECKPOINT_JOB_SHAPES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "server/checkpoint/checkpoint_codec.h"

namespace cairn::checkpoint {

// One TableShape per table of `job`, in table-id order. InvalidArgument
// naming the table when its optimizer spec is invalid.
absl::StatusOr<std::vector<TableShape>> JobTableShapes(const v1::JobSpec& job);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_JOB_SHAPES_H_
