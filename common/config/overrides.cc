#include "common/config/overrides.h"

#include "common/status_macros.h"

namespace cairn {

absl::Status ApplyOverrides(const std::vector<std::string>& assignments, JobConfig* config) {
  std::vector<std::string> all = config->overrides;
  all.insert(all.end(), assignments.begin(), assignments.end());
  ASSIGN_OR_RETURN(JobConfig updated, ParseJobConfig(config->source, config->path, all));
  *config = std::move(updated);
  return absl::OkStatus();
}

}  // namespace cairn
