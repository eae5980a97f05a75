// The `checkpoint:` section of the job config.
#include <catch2/catch.hpp>

#include "tests/common/config_test_util.h"

namespace cairn {
namespace {

using testing::ParseError;
using testing::ParseOk;

TEST_CASE("checkpoint defaults: no directory, no schedule, keep 3") {
  const JobConfig c = ParseOk("cluster: {servers: 1}\n");
  CHECK(c.checkpoint.dir.empty());
  CHECK(c.checkpoint.every_clocks == 0);
  CHECK(c.checkpoint.every == absl::ZeroDuration());
  CHECK(c.checkpoint.keep == 3);
}

TEST_CASE("checkpoint section is parsed with units") {
  const JobConfig c = ParseOk(
      "checkpoint:\n"
      "  dir: ckpt\n"
      "  every_clocks: 100\n"
      "  every: 10m\n"
      "  keep: 5\n");
  CHECK(c.checkpoint.dir == "ckpt");
  CHECK(c.checkpoint.every_clocks == 100);
  CHECK(c.checkpoint.every == absl::Minutes(10));
  CHECK(c.checkpoint.keep == 5);
  CHECK_THAT(DescribeConfig(c), Catch::Contains("checkpoint.every_clocks: 100"));
  CHECK_THAT(DescribeConfig(c), Catch::Contains("checkpoint.keep: 5"));
}

TEST_CASE("bad checkpoint settings name the key and its place") {
  CHECK_THAT(ParseError("checkpoint:\n  dir: ckpt\n  keep: 0\n"),
             Catch::StartsWith("job.yaml:3:9:") && Catch::Contains("checkpoint.keep"));
  CHECK_THAT(ParseError("checkpoint:\n  dir: ckpt\n  every_clocks: -1\n"),
             Catch::Contains("checkpoint.every_clocks"));
  CHECK_THAT(ParseError("checkpoint:\n  dir: ckpt\n  every: 10\n"),
             Catch::Contains("checkpoint.every"));
  CHECK_THAT(ParseError("checkpoint:\n  every_clocks: 10\n"),
             Catch::Contains("checkpoint.every_clocks") && Catch::Contains("needs checkpoint.dir"));
  CHECK_THAT(ParseError("checkpoint:\n  dir: ckpt\n  kep: 2\n"),
             Catch::Contains("did you mean `keep`"));
}

}  // namespace
}  // namespace cairn
