#include "server/coordinator/coordinator_disk.h"

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/coordinator/checkpoint_registry.h"
#include "server/coordinator/resume.h"
#include "server/checkpoint/checkpoint_format.h"

namespace cairn {
namespace {

bool SamePath(const std::string& a, const std::string& b) {
  std::error_code error;
  const std::filesystem::path pa = std::filesystem::weakly_canonical(a, error);
  if (error) return a == b;
  const std::filesystem::path pb = std::filesystem::weakly_canonical(b, error);
  if (error) return a == b;
  return pa == pb;
}

// Picks and checks, read-only, the checkpoint a resumed job starts from.
absl::Status ChooseCheckpoint(const CheckpointConfig& c, v1::JobSpec* job) {
  std::error_code error;
  if (!std::filesystem::is_directory(c.dir, error)) {
    return absl::NotFoundError(absl::StrCat("checkpoint.dir ", c.dir,
                                            " does not exist; nothing to resume from "
                                            "(checkpoint.resume: ", c.resume, ")"));
  }
  const std::string store = checkpoint::CoordinatorStoreDir(c.dir);
  ASSIGN_OR_RETURN(std::vector<v1::CheckpointRecord> records,
                   CheckpointRegistry::ReadRecords(store));
  ASSIGN_OR_RETURN(v1::CheckpointRecord record, ChooseResumePoint(records, c.resume, store));
  RETURN_IF_ERROR(CheckResumePoint(record, job, c.dir));
  LOG_INFO("resuming from checkpoint record {} at clock {} ({} partitions) in {}", record.id(),
           record.clock(), record.partitions_size(), c.dir);
  *job->mutable_resume_from() = std::move(record);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoredStateAction> DecideStoredState(const std::optional<PersistedState>& stored,
                                                    const v1::JobSpec& job, bool resume,
                                                    bool discard, const std::string& where) {
  if (!stored.has_value()) return StoredStateAction::kNone;
  if (discard) return StoredStateAction::kDiscard;
  if (stored->job.config_hash() == job.config_hash()) return StoredStateAction::kRestore;
  if (resume) return StoredStateAction::kDiscard;
  return absl::FailedPreconditionError(absl::StrCat(
      where, " holds the coordinator state of another job: config hash ",
      stored->job.config_hash(), " (map version ", stored->map.version(), ", ",
      stored->members.size(), " members), while this config's hash is ", job.config_hash(),
      ". A coordinator resumes only the job it stored; to start this one anyway, run with "
      "--discard-state (drops the stored members and map, keeps checkpoint records) or set "
      "cluster.state_dir elsewhere"));
}

absl::StatusOr<CoordinatorDisk> OpenCoordinatorDisk(const JobConfig& config, bool discard,
                                                    v1::JobSpec* job) {
  const CheckpointConfig& c = config.checkpoint;
  const bool resume = !c.dir.empty() && c.resume != "none";
  const std::string state_dir = config.cluster.state_dir;
  CoordinatorDisk disk;

  // 1. Read-only: the stored state and the checkpoint to resume from.
  std::optional<PersistedState> stored;
  if (!state_dir.empty()) {
    ASSIGN_OR_RETURN(std::optional<std::string> raw, CoordinatorStore::Peek(state_dir, kStateKey));
    if (raw.has_value() && discard) {
      stored.emplace();  // dropped unread: it may be the damaged value
    } else if (raw.has_value()) {
      absl::StatusOr<PersistedState> decoded = DecodeState(*raw, state_dir);
      if (!decoded.ok()) {
        return absl::Status(decoded.status().code(),
                            absl::StrCat(decoded.status().message(),
                                         "; start with --discard-state to drop it"));
      }
      stored = *std::move(decoded);
    }
  }
  ASSIGN_OR_RETURN(disk.action, DecideStoredState(stored, *job, resume, discard, state_dir));
  if (resume) RETURN_IF_ERROR(ChooseCheckpoint(c, job));

  // 2. Open for writing.
  const std::string records_dir = c.dir.empty() ? "" : checkpoint::CoordinatorStoreDir(c.dir);
  if (!records_dir.empty()) {
    ASSIGN_OR_RETURN(disk.records, CoordinatorStore::Open(records_dir, /*create=*/!resume));
  }
  if (!state_dir.empty()) {
    if (disk.records != nullptr && SamePath(state_dir, records_dir)) {
      disk.state = disk.records.get();
    } else {
      ASSIGN_OR_RETURN(disk.own_state, CoordinatorStore::Open(state_dir, /*create=*/true));
      disk.state = disk.own_state.get();
    }
  }
  switch (disk.action) {
    case StoredStateAction::kRestore:
      disk.stored = std::move(stored);
      break;
    case StoredStateAction::kDiscard:
      LOG_INFO("dropping the coordinator state stored in {} (job {}): {}", state_dir,
               discard ? "unread" : stored->job.config_hash(),
               discard ? "--discard-state" : "this job starts a new run from a checkpoint");
      RETURN_IF_ERROR(disk.state->Delete(kStateKey));
      break;
    case StoredStateAction::kNone:
      break;
  }
  return disk;
}

}  // namespace cairn
