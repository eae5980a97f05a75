// Where a server's partitions start from when the job does not start from
// the tables' initializers: the checkpoint the job resumes from
// (JobSpec.resume_from, chosen and checked by the coordinator) or a
// .safetensors file of initial values (JobSpec.checkpoint.init_from).
#ifndef CAIRN_SERVER_SHARD_INITIAL_ROWS_H_
#define CAIRN_SERVER_SHARD_INITIAL_ROWS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "server/shard/shard.h"

namespace cairn {

struct InitialState {
  InitialRowsLoader loader;
  int64_t start_clock = 0;
  std::string source;  // for the log: "checkpoint record 4 (clock 600) in DIR", "FILE"
};

// The loader for `job`, or nullopt when the job starts from its tables'
// initializers. A resume reads each partition from the store the record
// names (<dir>/server-<id>, opened read-only), verifying its XXH64 against
// the store's manifest and the coordinator's record: DataLoss naming the
// store, checkpoint, table and partition otherwise. A file is read once,
// here; errors name the file (and the table, with both shapes).
// The loader is thread-compatible (the shard calls it under its lock).
absl::StatusOr<std::optional<InitialState>> MakeInitialState(const v1::JobSpec& job);

// Loads partitions of complete checkpoint records from the stores under
// `dir`, as a resume does (checksums verified against store and record);
// for a group restored while the job runs (replication 1). Thread-compatible.
class CheckpointPartitionReader {
 public:
  explicit CheckpointPartitionReader(std::string dir);
  ~CheckpointPartitionReader();
  absl::StatusOr<PartitionRows> Read(const v1::CheckpointRecord& record,
                                     const v1::TableSpec& table, uint32_t partition);

 private:
  class Impl;
  const std::string dir_;
  std::map<uint64_t, std::unique_ptr<Impl>> by_record_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_INITIAL_ROWS_H_
