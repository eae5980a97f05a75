// What a starting cairn-coordinator reads from disk before it serves: the
// checkpoint to resume from (checkpoint.resume), the store of checkpoint
// records (<checkpoint.dir>/coordinator) and the state a previous
// coordinator left in cluster.state_dir, with the decision what to do with
// that state:
//
//   none stored                      start a new job
//   --discard-state                  drop it, start a new job
//   same config hash                 restore it (CoordinatorState::Restore)
//   another hash, checkpoint.resume  drop it: a new run from a checkpoint
//   another hash, no resume          refuse (FailedPrecondition): it is
//                                    another job's, naming both hashes
//
// Nothing is written before every check has passed: a refused start leaves
// every file as it was. When cluster.state_dir is the records' directory
// (its default) one store serves both.
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_DISK_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_DISK_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "common/config/job_config.h"
#include "server/coordinator/coordinator_store.h"
#include "server/coordinator/state_codec.h"

namespace cairn {

enum class StoredStateAction { kNone, kRestore, kDiscard };

// The rule table above, for a store at `where` holding `stored` (nullopt:
// nothing). Errors: FailedPrecondition naming both config hashes, the
// stored map version and how to start anyway.
absl::StatusOr<StoredStateAction> DecideStoredState(const std::optional<PersistedState>& stored,
                                                    const v1::JobSpec& job, bool resume,
                                                    bool discard, const std::string& where);

struct CoordinatorDisk {
  std::unique_ptr<CoordinatorStore> records;  // null without checkpoint.dir
  std::unique_ptr<CoordinatorStore> own_state;  // when state_dir is elsewhere
  CoordinatorStore* state = nullptr;          // null without cluster.state_dir
  StoredStateAction action = StoredStateAction::kNone;
  std::optional<PersistedState> stored;       // set for kRestore
};

// Opens the stores of `config`; for a resume, picks and checks the
// checkpoint into job->resume_from (resume.h). `discard`: --discard-state.
// When action is kDiscard the stored state is already removed. Errors name
// the directory: NotFound / DataLoss / FailedPrecondition (a resume point
// that does not fit, another job's state, a store held by a live process),
// Unavailable.
absl::StatusOr<CoordinatorDisk> OpenCoordinatorDisk(const JobConfig& config, bool discard,
                                                    v1::JobSpec* job);

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_DISK_H_
