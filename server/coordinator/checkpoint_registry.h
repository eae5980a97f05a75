// The coordinator's record of complete checkpoints (docs/design.md, Checkpoints),
// in the coordinator's store <checkpoint.dir>/coordinator (coordinator_store.h,
// keys 'R' id), which it may share with the coordinator's state.
//
// Servers report the partitions they wrote at a clock, with each one's
// XXH64. Once every (table, partition) of the job is in at that clock, the
// registry writes a CheckpointRecord (one synced WriteBatch that also drops
// records beyond the newest `keep`), and only then is the checkpoint
// complete: a restore loads nothing else. Records are keyed by an increasing
// id, not by clock, so a job resumed from an older checkpoint writes newer
// records than the ones it branched from.
//
// Value layout: XXH64 (seed 0, little-endian u64) of the rest, then the
// serialized cairn.v1.CheckpointRecord.
#ifndef CAIRN_SERVER_COORDINATOR_CHECKPOINT_REGISTRY_H_
#define CAIRN_SERVER_COORDINATOR_CHECKPOINT_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"

namespace cairn {

class CoordinatorMetrics;
class CoordinatorStore;

// Thread-safe.
class CheckpointRegistry {
 public:
  // Loads the records of `store` (opened by the caller; must outlive this).
  // `num_tables` x `num_partitions` pairs make a checkpoint complete;
  // `keep` >= 1 records are kept. `metrics` may be null. Errors:
  // InvalidArgument (keep < 1), DataLoss (a record fails its checksum),
  // Unavailable (read failed); each names the store.
  static absl::StatusOr<std::unique_ptr<CheckpointRegistry>> Open(
      CoordinatorStore* store, uint32_t num_tables, uint32_t num_partitions, int keep,
      CoordinatorMetrics* metrics);

  // The records of the store at `store_dir`, oldest first, read without
  // writing anything (also while a live coordinator holds it). Errors as Open.
  static absl::StatusOr<std::vector<v1::CheckpointRecord>> ReadRecords(
      const std::string& store_dir);

  struct ReportResult {
    bool complete = false;          // the checkpoint at this clock is complete
    std::vector<uint64_t> keep_ids;  // the reporter's store ids still referenced
  };
  // Records the partitions a server wrote at `request.clock()`; completes the
  // checkpoint when it was the last missing piece. Idempotent. Errors:
  // InvalidArgument (table or partition out of range, a partition of another
  // server), Unavailable (store write failed: nothing recorded).
  absl::StatusOr<ReportResult> Report(const v1::ReportCheckpointRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The complete record at `clock` newer than record id `after_id`, waiting
  // until `deadline`. DeadlineExceeded naming the clock and up to 8 missing
  // "table/partition" pairs.
  absl::StatusOr<v1::CheckpointRecord> WaitComplete(int64_t clock, uint64_t after_id,
                                                    absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // The complete record at `clock` newer than record id `after_id`, if
  // there is one now (no waiting).
  std::optional<v1::CheckpointRecord> Find(int64_t clock, uint64_t after_id) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Complete records, oldest first.
  std::vector<v1::CheckpointRecord> List() const ABSL_LOCKS_EXCLUDED(mu_);
  // The newest record id, 0 when none.
  uint64_t LatestId() const ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& dir() const { return dir_; }

 private:
  CheckpointRegistry(CoordinatorStore* store, uint32_t num_tables, uint32_t num_partitions,
                     int keep, CoordinatorMetrics* metrics);
  absl::Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the record of `clock` from pending_ and trims to keep_.
  absl::Status Complete(int64_t clock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<uint64_t> KeepIds(uint32_t server_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The record at `clock` with id > after_id, or null.
  const v1::CheckpointRecord* FindLocked(int64_t clock, uint64_t after_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CoordinatorStore* const store_;  // borrowed; thread-safe
  const std::string dir_;
  const uint32_t num_tables_;
  const uint32_t num_partitions_;
  const int keep_;
  CoordinatorMetrics* const metrics_;

  mutable absl::Mutex mu_;
  std::vector<v1::CheckpointRecord> records_ ABSL_GUARDED_BY(mu_);  // by id
  // clock -> (table, partition) -> the reported piece
  std::map<int64_t, std::map<std::pair<uint32_t, uint32_t>, v1::CheckpointPartition>> pending_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_CHECKPOINT_REGISTRY_H_
