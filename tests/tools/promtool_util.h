// Helpers for tests that run Debian's Prometheus tools (package prometheus,
// installed by tools/setup): find promtool, run it, and read Prometheus text
// expositions.
#ifndef CAIRN_TESTS_TOOLS_PROMTOOL_UTIL_H_
#define CAIRN_TESTS_TOOLS_PROMTOOL_UTIL_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn::testing {

inline constexpr char kPromtool[] = "/usr/bin/promtool";
inline constexpr char kPrometheus[] = "/usr/bin/prometheus";

// True when `path` exists and is executable.
bool HaveTool(const std::string& path);

// What a command printed and how it ended.
struct CommandResult {
  int exit_code = -1;  // -1: it did not exit normally
  std::string out;     // stdout
  std::string err;     // stderr
  // stdout, then stderr.
  std::string output() const { return out + err; }
};

// Runs `args` (args[0] is the binary's path) with `input` on stdin; waits for it.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& args,
                                         const std::string& input = "");

// One sample line of a text exposition: the metric name and its labels.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// The sample lines of a Prometheus text exposition (comments and blank lines
// skipped). InvalidArgument quoting the line when one does not parse.
absl::StatusOr<std::vector<Sample>> ParseExposition(const std::string& text);

// The `cairn_...` metric names in a PromQL expression: identifiers starting
// with "cairn_" outside string literals, label matchers ({...}) and label
// lists (by, without, on, ignoring, group_left, group_right).
std::set<std::string> CairnMetricNames(const std::string& promql);

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TOOLS_PROMTOOL_UTIL_H_
