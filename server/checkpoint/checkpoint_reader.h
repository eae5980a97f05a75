// Reads checkpoints back from a server's RocksDB store (checkpoint_format.h),
// verifying every checksum. Opens the store read-only, so a restore may read
// the stores of any servers, whatever the number of servers now.
//
// Only checkpoints whose manifest exists are listed: the manifest is written
// in the same atomic WriteBatch as the data (checkpoint_writer.h), so a
// listed checkpoint is complete unless its bytes were damaged afterwards,
// which the checksums catch.
#ifndef CAIRN_SERVER_CHECKPOINT_CHECKPOINT_READER_H_
#define CAIRN_SERVER_CHECKPOINT_CHECKPOINT_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/checkpoint/partition_rows.h"

namespace rocksdb {
class DB;
}

namespace cairn::checkpoint {

// Thread-safe (RocksDB reads are).
class CheckpointReader {
 public:
  // Opens the store at `dir` read-only; creates and changes nothing.
  // Errors: NotFound when `dir` does not exist or holds no store, DataLoss
  // for a corrupt store, Unavailable for other IO errors; each names `dir`.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& dir);
  ~CheckpointReader();

  // Manifests of every complete checkpoint, by ascending id. DataLoss naming
  // the checkpoint when a manifest fails its own checksum.
  absl::StatusOr<std::vector<Manifest>> List() const;

  // The newest complete checkpoint; NotFound naming the directory if none.
  absl::StatusOr<Manifest> Latest() const;

  // The rows of (table_id, partition) in checkpoint `m`. Errors: NotFound
  // when `m` has no such partition; DataLoss naming checkpoint, table and
  // partition when the value is missing, its XXH64 differs from the
  // manifest's or it does not decode.
  absl::StatusOr<PartitionRows> ReadPartition(const Manifest& m, uint32_t table_id,
                                              uint32_t partition) const;

  // The worker clocks and sequence floors of `m`; DataLoss as ReadPartition.
  absl::StatusOr<WorkerState> ReadWorkers(const Manifest& m) const;

  const std::string& dir() const { return dir_; }

 private:
  CheckpointReader(std::string dir, std::unique_ptr<rocksdb::DB> db);
  // The value at `key`, checked against `checksum`; `what` names it in errors.
  absl::StatusOr<std::string> GetVerified(const std::string& key, uint64_t checksum,
                                          const std::string& what) const;

  const std::string dir_;
  const std::unique_ptr<rocksdb::DB> db_;
};

// OK when every table of `job` appears in `m` under the same id with the same
// shape, and `m` has no other table. FailedPrecondition otherwise, naming the
// table and both shapes ("table W: checkpoint has dense [10,4] ..., the job has
// dense [10,5] ...") or the missing/extra table.
absl::Status CheckTablesMatch(const Manifest& m, const std::vector<TableShape>& job);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_CHECKPOINT_READER_H_
