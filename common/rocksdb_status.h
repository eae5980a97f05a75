// The one place rocksdb::Status becomes absl::Status.
#ifndef CAIRN_COMMON_ROCKSDB_STATUS_H_
#define CAIRN_COMMON_ROCKSDB_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "rocksdb/status.h"

namespace cairn {

// OK for ok; otherwise `context` ("open checkpoint store DIR") followed by
// RocksDB's message, with the code: Corruption -> DataLoss, NotFound ->
// NotFound, InvalidArgument -> InvalidArgument, a held LOCK file (another live
// process owns the store) -> FailedPrecondition, other IO errors ->
// Unavailable, the rest -> Internal.
absl::Status FromRocksStatus(const rocksdb::Status& status, absl::string_view context);

}  // namespace cairn

#endif  // CAIRN_COMMON_ROCKSDB_STATUS_H_
