// common/identity.h: where an index, the coordinator's address and the
// advertised host come from, in order, and the errors that name the source.
#include "common/identity.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

namespace cairn {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ResolvedIndex Index(const std::map<std::string, std::string>& vars, int flag = -1,
                    int count = 8) {
  absl::StatusOr<ResolvedIndex> r = ResolveIndex("worker", flag, "--worker-id", count, Env(vars));
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

std::string IndexError(const std::map<std::string, std::string>& vars, int flag = -1,
                       int count = 8) {
  absl::StatusOr<ResolvedIndex> r = ResolveIndex("worker", flag, "--worker-id", count, Env(vars));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

}  // namespace

TEST_CASE("the index comes from the flag, then CAIRN_INDEX, JOB_COMPLETION_INDEX, the "
          "StatefulSet ordinal, SLURM_PROCID",
          "[identity]") {
  const std::map<std::string, std::string> all = {
      {"CAIRN_INDEX", "1"},          {"JOB_COMPLETION_INDEX", "2"},
      {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"HOSTNAME", "cairn-workers-3"},
      {"SLURM_PROCID", "4"}};
  CHECK(Index(all, 0).index == 0);
  CHECK(Index(all, 0).source == "--worker-id");
  auto without = [&](std::initializer_list<const char*> names) {
    std::map<std::string, std::string> v = all;
    for (const char* n : names) v.erase(n);
    return v;
  };
  CHECK(Index(all).index == 1);
  CHECK(Index(all).source == "CAIRN_INDEX");
  CHECK(Index(without({"CAIRN_INDEX"})).index == 2);
  CHECK(Index(without({"CAIRN_INDEX"})).source == "JOB_COMPLETION_INDEX");
  CHECK(Index(without({"CAIRN_INDEX", "JOB_COMPLETION_INDEX"})).index == 3);
  CHECK(Index(without({"CAIRN_INDEX", "JOB_COMPLETION_INDEX", "KUBERNETES_SERVICE_HOST"})).index ==
        4);
  CHECK(Index({}).index == -1);
  CHECK(Index({}).source.empty());
}

TEST_CASE("the hostname ordinal counts only inside Kubernetes", "[identity]") {
  // A Slurm node named node-12 is not a StatefulSet pod.
  CHECK(Index({{"HOSTNAME", "node-12"}}).index == -1);
  CHECK(Index({{"HOSTNAME", "node-5"}, {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}).index == 5);
  CHECK(Index({{"HOSTNAME", "coordinator"}, {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}).index == -1);
}

TEST_CASE("C04: SLURM_PROCID minus CAIRN_INDEX_OFFSET gives two groups distinct ids",
          "[identity][cases]") {
  // One srun over 2 groups of 2 ranks each (ranks 0-1 and 2-3); each group's
  // tasks get the group's first rank as the offset.
  std::set<int> ids;
  for (int rank = 0; rank < 4; ++rank) {
    const int offset = rank < 2 ? 0 : 2;
    const ResolvedIndex r = Index({{"SLURM_PROCID", std::to_string(rank)},
                                   {"CAIRN_INDEX_OFFSET", std::to_string(offset)}},
                                  -1, 2);
    ids.insert(r.index + offset);
    CHECK(r.index == rank - offset);
  }
  CHECK(ids == std::set<int>{0, 1, 2, 3});
  CHECK_THAT(IndexError({{"SLURM_PROCID", "1"}, {"CAIRN_INDEX_OFFSET", "3"}}),
             Catch::Contains("SLURM_PROCID=1 is below CAIRN_INDEX_OFFSET=3"));
}

TEST_CASE("bad indices are refused naming their source", "[identity]") {
  CHECK_THAT(IndexError({{"CAIRN_INDEX", "abc"}}),
             Catch::Contains("CAIRN_INDEX=\"abc\" is not a non-negative integer"));
  CHECK_THAT(IndexError({{"JOB_COMPLETION_INDEX", "-1"}}),
             Catch::Contains("JOB_COMPLETION_INDEX=\"-1\""));
  CHECK_THAT(IndexError({{"CAIRN_INDEX", "4"}}, -1, 4),
             Catch::Contains("worker index 4 (from CAIRN_INDEX) is out of range: "
                             "cluster.workers is 4 (indices 0..3)"));
  CHECK_THAT(IndexError({}, 9, 4), Catch::Contains("(from --worker-id) is out of range"));
}

TEST_CASE("the coordinator's address: flag, then CAIRN_COORDINATOR, then the YAML",
          "[identity]") {
  const EnvLookup env = Env({{"CAIRN_COORDINATOR", "coord.svc:7070"}});
  CHECK(ResolveCoordinator("a:1", "c:3", env)->value == "a:1");
  CHECK(ResolveCoordinator("", "c:3", env)->value == "coord.svc:7070");
  CHECK(ResolveCoordinator("", "c:3", env)->source == "CAIRN_COORDINATOR");
  CHECK(ResolveCoordinator("", "c:3", Env({}))->value == "c:3");
  absl::StatusOr<Sourced> bad = ResolveCoordinator("", "c:3", Env({{"CAIRN_COORDINATOR", "x"}}));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("CAIRN_COORDINATOR"));
}

TEST_CASE("the advertised host: flag, then CAIRN_ADVERTISE_HOST, then the listen host",
          "[identity]") {
  const EnvLookup env = Env({{"CAIRN_ADVERTISE_HOST", "10.1.2.3"}});
  CHECK(ResolveAdvertiseHost("h", "0.0.0.0", env).value == "h");
  CHECK(ResolveAdvertiseHost("", "0.0.0.0", env).value == "10.1.2.3");
  CHECK(ResolveAdvertiseHost("", "127.0.0.1", Env({})).value == "127.0.0.1");
}

TEST_CASE("a name that does not resolve fails after the timeout, naming it", "[identity]") {
  CHECK(WaitUntilResolvable("localhost:7070", "--coordinator", absl::Seconds(1)).ok());
  const absl::Status s =
      WaitUntilResolvable("cairn-no-such-host.invalid:7070", "CAIRN_COORDINATOR",
                          absl::Milliseconds(500));
  CHECK(s.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("\"cairn-no-such-host.invalid\" (from CAIRN_COORDINATOR) does not "
                             "resolve"));
}

}  // namespace cairn
