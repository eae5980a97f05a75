#include "common/config/overrides.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"

namespace cairn {

absl::Status ApplyOverrides(const std::vector<std::string>& assignments, JobConfig* config) {
  std::vector<std::string> all = config->overrides;
  all.insert(all.end(), assignments.begin(), assignments.end());
  ASSIGN_OR_RETURN(JobConfig updated, ParseJobConfig(config->source, config->path, all));
  *config = std::move(updated);
  return absl::OkStatus();
}

absl::Status NameFlagOfOverride(const absl::Status& status, const std::string& assignment,
                                const std::string& flag) {
  if (status.ok()) return status;
  const std::string message = absl::StrReplaceAll(
      status.message(), {{absl::StrCat("override `", assignment, "`"),
                          absl::StrCat(flag, " (", assignment, ")")}});
  return absl::Status(status.code(), message);
}

}  // namespace cairn
