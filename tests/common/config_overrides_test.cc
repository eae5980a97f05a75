// Command-line overrides (common/config/overrides.h): applied to the YAML tree
// before validation, so the same checks and a message that names the flag.
#include "common/config/overrides.h"

#include <catch2/catch.hpp>

#include "tests/common/config_test_util.h"

namespace cairn {
namespace {

using Catch::Contains;
using Catch::Equals;
using testing::ParseError;
using testing::ParseOk;

constexpr char kBase[] = R"(cluster:
  servers: 2
consistency: {mode: ssp, staleness: 1}
tables:
  - {name: emb_user, kind: sparse, width: 8}
  - {name: emb.item, kind: sparse, width: 8}
)";

}  // namespace

TEST_CASE("overrides replace and add values", "[config][overrides]") {
  const JobConfig c = ParseOk(kBase, {"consistency.staleness=2", "cluster.servers=3",
                                      "cluster.workers=5", "rpc.deadline=7s"});
  CHECK(c.staleness == 2);
  CHECK(c.cluster.servers == 3);
  CHECK(c.cluster.workers == 5);
  CHECK(c.rpc.deadline == absl::Seconds(7));
  CHECK(c.tables[0].staleness() == 2);  // tables inherit the overridden default
  CHECK(c.overrides.size() == 4);
}

TEST_CASE("overrides reach list entries by index or by table name", "[config][overrides]") {
  const JobConfig c = ParseOk(kBase, {"tables[1].width=32", "tables[emb_user].width=4",
                                      "tables[emb.item].optimizer={type: adam, "
                                      "learning_rate: 0.01}"});
  CHECK(c.tables[0].width() == 4);
  CHECK(c.tables[1].width() == 32);
  CHECK(c.tables[1].optimizer().kind() == v1::OPTIMIZER_KIND_ADAM);
  CHECK(ParseOk(kBase, {"training.layers=[4, 3, 2]"}).training.layers ==
        std::vector<int>{4, 3, 2});
  CHECK(ParseOk(kBase, {"cluster.coordinator=[::1]:7070"}).cluster.coordinator == "[::1]:7070");
}

TEST_CASE("a bad override is rejected naming the flag and the key", "[config][overrides]") {
  CHECK_THAT(ParseError(kBase, {"consistency.staleness=2.5"}),
             Equals("override `consistency.staleness=2.5`: `consistency.staleness` must be a "
                    "non-negative integer; got `2.5`"));
  CHECK_THAT(ParseError(kBase, {"cluster.servers=0"}),
             Equals("override `cluster.servers=0`: `cluster.servers` must be an integer >= 1; "
                    "got 0"));
  CHECK_THAT(ParseError(kBase, {"consistency.stalenes=2"}),
             Equals("override `consistency.stalenes=2`: unknown key `consistency.stalenes` "
                    "(did you mean `staleness`?)"));
  CHECK_THAT(ParseError(kBase, {"cluster.lease_timeout=3"}),
             Contains("override `cluster.lease_timeout=3`: `cluster.lease_timeout` is not a "
                      "valid duration"));
  CHECK_THAT(ParseError(kBase, {"tables[7].width=2"}),
             Equals("override `tables[7].width=2`: `tables` has no entry at index 7 "
                    "(2 entries)"));
  CHECK_THAT(ParseError(kBase, {"tables[nope].width=2"}),
             Contains("`tables` has no entry named \"nope\""));
  CHECK_THAT(ParseError("cluster:\n  servers: 2\n", {"tables[0].width=2"}),
             Equals("override `tables[0].width=2`: the file has no `tables`, so [0] selects "
                    "nothing (a model's own tables take their settings from `training`: "
                    "training.optimizer, training.wire_dtype, and for the ctr model's "
                    "embedding tables training.embedding.capacity_rows, .ttl_clocks, ...)"));
  CHECK_THAT(ParseError(kBase, {"training.layers[1]=3"}),
             Equals("override `training.layers[1]=3`: the file has no `training.layers`, so "
                    "[1] selects nothing (set the whole list: training.layers=[...])"));
  CHECK_THAT(ParseError(kBase, {"cluster[0].servers=2"}),
             Equals("override `cluster[0].servers=2`: `cluster` is not a list, so [0] selects "
                    "nothing"));
  CHECK_THAT(ParseError(kBase, {"cluster.servers.count=2"}),
             Contains("`cluster.servers` is not a map"));
  CHECK_THAT(ParseError(kBase, {"cluster.servers"}), Contains("expected key.path=value"));
  CHECK_THAT(ParseError(kBase, {"cluster..servers=1"}), Contains("empty key"));
  CHECK_THAT(ParseError(kBase, {"training.optimizer.nesterov=yes"}),
             Contains("override `training.optimizer.nesterov=yes`"));
}

TEST_CASE("ApplyOverrides re-validates and leaves the config alone on error",
          "[config][overrides]") {
  JobConfig c = ParseOk(kBase);
  const std::string before_hash = c.config_hash;
  REQUIRE(ApplyOverrides({"consistency.staleness=4"}, &c).ok());
  CHECK(c.staleness == 4);
  CHECK(c.config_hash != before_hash);
  const absl::Status bad = ApplyOverrides({"cluster.servers=0"}, &c);
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.message()), Contains("override `cluster.servers=0`"));
  CHECK(c.staleness == 4);
  CHECK(c.cluster.servers == 2);
  REQUIRE(ApplyOverrides({"cluster.servers=3"}, &c).ok());
  CHECK(c.staleness == 4);  // earlier overrides are kept
  CHECK(c.cluster.servers == 3);
  CHECK(c.overrides == std::vector<std::string>{"consistency.staleness=4", "cluster.servers=3"});
}

TEST_CASE("an override a flag made is named by the flag in its error", "[config][overrides]") {
  JobConfig c = ParseOk(kBase);
  const absl::Status error = ApplyOverrides({"checkpoint.resume=latest"}, &c);
  REQUIRE_FALSE(error.ok());
  const absl::Status named = NameFlagOfOverride(error, "checkpoint.resume=latest", "--resume");
  CHECK(named.code() == error.code());
  CHECK_THAT(std::string(named.message()),
             Catch::StartsWith("--resume (checkpoint.resume=latest): `checkpoint.resume` needs "
                               "checkpoint.dir"));
  // Another override's error is left as it is.
  const absl::Status other = ApplyOverrides({"cluster.servers=0"}, &c);
  CHECK(NameFlagOfOverride(other, "checkpoint.resume=latest", "--resume").message() ==
        other.message());
}

}  // namespace cairn
