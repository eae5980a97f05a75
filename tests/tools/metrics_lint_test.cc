// Every daemon's /metrics, scraped from a job that is training, passes
// `promtool check metrics` (Prometheus's own lint: names, suffixes, units,
// help texts, histogram shapes).
#include <catch2/catch.hpp>
#include <string>

#include "tests/tools/observed_job.h"
#include "tests/tools/promtool_util.h"

namespace cairn {
namespace {

using testing::kPromtool;

TEST_CASE("every daemon's /metrics passes promtool check metrics", "[tools][metrics]") {
  if (!testing::HaveTool(kPromtool)) {
    FAIL(kPromtool << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
  auto job = testing::ObservedJob::Start("metrics_lint", 2);
  INFO(job.status().message());
  REQUIRE(job.ok());
  for (const testing::MetricsEndpoint& e : (*job)->endpoints()) {
    INFO(e.role << " " << e.id << " at 127.0.0.1:" << e.port);
    absl::StatusOr<std::string> body = testing::HttpGet(e.port, "/metrics");
    REQUIRE(body.ok());
    CHECK_THAT(*body, Catch::Contains("process_resident_memory_bytes"));
    auto lint = testing::RunCommand({kPromtool, "check", "metrics"}, *body);
    REQUIRE(lint.ok());
    INFO("promtool check metrics:\n" << lint->output());
    CHECK(lint->exit_code == 0);
    CHECK(lint->output().empty());  // no warning either
  }
}

}  // namespace
}  // namespace cairn
