#include "common/rocksdb_status.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cairn {

absl::Status FromRocksStatus(const rocksdb::Status& status, absl::string_view context) {
  if (status.ok()) return absl::OkStatus();
  const std::string message = absl::StrCat(context, ": ", status.ToString());
  if (status.IsCorruption()) return absl::DataLossError(message);
  if (status.IsNotFound()) return absl::NotFoundError(message);
  if (status.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  if (status.IsIOError()) {
    // RocksDB reports a LOCK file held by another process as an IO error
    // ("lock hold by current process" / "While lock file ...").
    if (absl::StrContains(status.ToString(), "lock")) {
      return absl::FailedPreconditionError(
          absl::StrCat(message, " (the store is held by another live process)"));
    }
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

}  // namespace cairn
