// Writes this server's checkpoints into its RocksDB store and keeps the last K.
//
// Crash safety: a checkpoint's partitions go into unsynced WriteBatches of
// about 64 MiB; its worker state and manifest go last, in one batch written
// with sync=true, which syncs every batch before it in the same WAL. RocksDB
// applies a WriteBatch atomically, also across a crash (WAL recovery replays
// a batch whole or not at all), and readers (checkpoint_reader.h) only trust
// a checkpoint whose manifest exists and whose checksums verify. So a kill -9
// at any moment leaves either the new checkpoint complete or, at most,
// partition values no manifest names (never read; the next checkpoint takes
// the same id and writes over them), and the previous complete checkpoints
// untouched. Retention deletes an old
// checkpoint's manifest and data in one batch too, so no half-deleted
// checkpoint is ever visible.
//
// One writer per directory: RocksDB's LOCK file refuses a second process.
#ifndef CAIRN_SERVER_CHECKPOINT_CHECKPOINT_WRITER_H_
#define CAIRN_SERVER_CHECKPOINT_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/checkpoint/partition_rows.h"

namespace rocksdb {
class DB;
}

namespace cairn::checkpoint {

// One partition of one table, as Table::ExportPartition returned it.
struct PartitionData {
  uint32_t table_id = 0;
  uint32_t partition = 0;
  PartitionRows rows;
};

// Thread-safe: Write calls are serialized.
class CheckpointWriter {
 public:
  // Opens (creating when missing) the store at `dir`, keeping the newest
  // `keep` (>= 1) checkpoints (older ones, left by a crash before retention
  // ran or by a larger `keep`, are deleted now). keep = 0: nothing is deleted
  // but by RetainOnly (a job's servers, whose retention follows the
  // coordinator's complete checkpoints). Errors: InvalidArgument (keep < 0),
  // FailedPrecondition when another live process holds the store, DataLoss
  // for a corrupt store, Unavailable for other IO errors; each names `dir`.
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Open(const std::string& dir,
                                                                uint32_t server_id, int keep);
  ~CheckpointWriter();

  // Writes checkpoint (last id + 1) at clock `clock`: every entry of
  // `partitions` (tables described by `tables`), in unsynced batches of
  // about 64 MiB, then `workers` and the manifest in one synced batch, which
  // makes it visible; then deletes checkpoints beyond the newest `keep`.
  // Returns the manifest written. Each partition's rows are freed as soon as
  // they are encoded, so the rows, the batches and the memtable do not each
  // hold the whole shard at once (pass a copy to keep them). Errors:
  // InvalidArgument when a partition names a table missing from `tables` or
  // appears twice; RocksDB errors as in Open. On error no new checkpoint is
  // visible.
  absl::StatusOr<Manifest> Write(int64_t clock, uint32_t num_partitions,
                                 const std::vector<TableShape>& tables,
                                 std::vector<PartitionData> partitions,
                                 const WorkerState& workers) ABSL_LOCKS_EXCLUDED(mu_);

  // Deletes every checkpoint whose id is not in `keep_ids`, except the newest
  // `max_pending` of those newer than every id in `keep_ids` (they may still
  // complete; 0 when nothing can be in flight, as when a server starts),
  // manifests and data in one batch. RocksDB errors as in Open.
  absl::Status RetainOnly(const std::vector<uint64_t>& keep_ids, int max_pending)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& dir() const { return dir_; }

 private:
  // Deletes checkpoints `ids` in one synced batch.
  absl::Status Delete(const std::vector<uint64_t>& ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  CheckpointWriter(std::string dir, uint32_t server_id, int keep, std::unique_ptr<rocksdb::DB> db);

  // Ids of complete checkpoints (manifests present), ascending.
  absl::StatusOr<std::vector<uint64_t>> ManifestIds() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes all but the newest keep_ checkpoints.
  absl::Status Retain() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const uint32_t server_id_;
  const int keep_;

  mutable absl::Mutex mu_;
  std::unique_ptr<rocksdb::DB> db_ ABSL_GUARDED_BY(mu_);
  bool compacting_ ABSL_GUARDED_BY(mu_) = false;  // auto compactions enabled
};

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_CHECKPOINT_WRITER_H_
