// Fuzz target: a job's YAML file through the config loader
// (common/config/job_config.h ParseJobConfig), with command-line overrides:
// each leading line "#set KEY=VALUE" of the input (a YAML comment) is also
// passed as an override, as `--set KEY=VALUE` would be. A config that parses
// is turned into the job spec every process gets and described as
// `cairn --describe` prints it.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/config/job_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  size_t at = 0;
  while (at < yaml.size() && overrides.size() < 8) {
    size_t end = yaml.find('\n', at);
    if (end == std::string::npos) end = yaml.size();
    const std::string line = yaml.substr(at, end - at);
    if (!absl::StartsWith(line, "#set ")) break;
    overrides.push_back(line.substr(5));
    at = end + 1;
  }
  absl::StatusOr<JobConfig> config = ParseJobConfig(yaml, "fuzz.yaml", overrides);
  if (!config.ok()) return 0;
  (void)ToJobSpec(*config);
  (void)DescribeConfig(*config);
  return 0;
}
