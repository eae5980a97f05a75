// Command-line overrides of a job config: "key.path=value" strings that every
// binary accepts (e.g. repeated `--set consistency.staleness=2`).
//
// An override is applied onto the YAML tree before validation, so it passes
// exactly the checks a value written in the file passes, and its errors read
// "override `cluster.servers=0`: `cluster.servers` must be an integer >= 1".
// Paths: keys joined by '.', list entries picked by index or by table name:
//   consistency.staleness=2          cluster.coordinator=[::1]:7070
//   tables[0].width=32               tables[emb_user].optimizer.learning_rate=0.05
//   training.layers=[784, 64, 10]    (a value in [] or {} is read as YAML)
// A key missing from the file is added; an unknown key is rejected as in the file.
//
// Thread-safe (pure functions over their arguments).
#ifndef CAIRN_COMMON_CONFIG_OVERRIDES_H_
#define CAIRN_COMMON_CONFIG_OVERRIDES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/config/job_config.h"

namespace cairn {

// Re-parses config->source with config->overrides followed by `assignments`
// and replaces *config with the result (overrides, config_hash updated).
// On error (InvalidArgument naming the override and the key) *config is
// unchanged. `config` must have come from ParseJobConfig / LoadJobConfig.
absl::Status ApplyOverrides(const std::vector<std::string>& assignments, JobConfig* config);

// `status` with "override `<assignment>`" in its message read as the flag
// the user gave, "<flag> (<assignment>)": for a flag that a binary turns
// into an override (cairn-coordinator --resume: checkpoint.resume=latest).
// Other statuses come back unchanged.
absl::Status NameFlagOfOverride(const absl::Status& status, const std::string& assignment,
                                const std::string& flag);

}  // namespace cairn

#endif  // CAIRN_COMMON_CONFIG_OVERRIDES_H_
