// Choosing and checking the checkpoint a job resumes from
// (`checkpoint.resume`), before the coordinator serves anyone: a bad choice
// fails the start with an error naming what is wrong, and nothing is
// written, moved or deleted.
#ifndef CAIRN_SERVER_COORDINATOR_RESUME_H_
#define CAIRN_SERVER_COORDINATOR_RESUME_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"

namespace cairn {

// The record `which` names among `records` (oldest first): "latest" = the
// newest; a clock = the newest record at that clock. NotFound naming
// `where` and the clocks on offer.
absl::StatusOr<v1::CheckpointRecord> ChooseResumePoint(
    const std::vector<v1::CheckpointRecord>& records, const std::string& which,
    const std::string& where);

// Opens (read-only) every server store `record` names under `dir` and checks
// that each holds the named checkpoint at the record's clock with the same
// checksums, that its tables match `job`'s by name and shape, and that every
// partition's bytes verify (it reads them all). The job takes each dense
// table's partition_offset from the checkpoint, so chunks stay in the
// partitions that hold them (a checkpoint of format 1 places every table at
// offset 0).
// Errors: NotFound (a store or checkpoint missing), DataLoss (checksums
// differ), FailedPrecondition naming the table and both shapes.
absl::Status CheckResumePoint(const v1::CheckpointRecord& record, v1::JobSpec* job,
                              const std::string& dir);

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_RESUME_H_
