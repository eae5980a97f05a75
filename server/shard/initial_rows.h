// Where a server's partitions start from when the job does not start from
// the tables' initializers: the checkpoint the job resumes from
// (JobSpec.resume_from, chosen and checked by the coordinator) or a
// .safetensors file of initial values (JobSpec.checkpoint.init_from).
#ifndef CAIRN_SERVER_SHARD_INITIAL_ROWS_H_
#define CAIRN_SERVER_SHARD_INITIAL_ROWS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "server/shard/shard.h"

namespace cairn {

struct InitialState {
  InitialRowsLoader loader;
  int64_t start_clock = 0;
};

// The loader for `job`, or nullopt when the job starts from its tables'
// initializers. A resume reads each partition from the store the record
// names (<dir>/server-<id>, opened read-only), verifying its XXH64 against
// the store's manifest and the coordinator's record: DataLoss naming the
// store, checkpoint, table and partition otherwise. A file is read once,
// here; errors name the file (and the table, with both shapes).
// The loader is thread-compatible (the shard calls it under its lock).
absl::StatusOr<std::optional<InitialState>> MakeInitialState(const v1::JobSpec& job);

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_INITIAL_ROWS_H_
