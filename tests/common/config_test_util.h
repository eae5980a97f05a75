// Helpers shared by the config tests: parse a YAML string named "job.yaml".
#ifndef CAIRN_TESTS_COMMON_CONFIG_TEST_UTIL_H_
#define CAIRN_TESTS_COMMON_CONFIG_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/config/job_config.h"

namespace cairn::testing {

// The config parsed from `yaml`; fails the test when it does not parse.
inline JobConfig ParseOk(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<JobConfig> r = ParseJobConfig(yaml, "job.yaml", overrides);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *std::move(r);
}

// The InvalidArgument message `yaml` is rejected with; fails the test when it parses.
inline std::string ParseError(const std::string& yaml,
                              const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<JobConfig> r = ParseJobConfig(yaml, "job.yaml", overrides);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_COMMON_CONFIG_TEST_UTIL_H_
