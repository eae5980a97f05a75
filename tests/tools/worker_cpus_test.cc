// How cairn-launch gives the workers of a one-machine job CPUs of their own
// (tools/launch/worker_cpus.h).
#include <catch2/catch.hpp>
#include <vector>

#include "tools/launch/worker_cpus.h"

namespace cairn::launch {
namespace {

using Cpus = std::vector<std::vector<int>>;

TEST_CASE("Workers get equal blocks of the allowed CPUs, in order", "[launch]") {
  CHECK(SplitCpusAmongWorkers({0, 1}, 2) == Cpus{{0}, {1}});
  CHECK(SplitCpusAmongWorkers({0, 1, 2, 3, 4, 5, 6, 7}, 2) == Cpus{{0, 1, 2, 3}, {4, 5, 6, 7}});
  // The allowed CPUs need not be contiguous (a cpuset, taskset).
  CHECK(SplitCpusAmongWorkers({2, 3, 8, 9}, 4) == Cpus{{2}, {3}, {8}, {9}});
  // CPUs left over go to no worker: the servers' and the coordinator's.
  CHECK(SplitCpusAmongWorkers({0, 1, 2}, 2) == Cpus{{0}, {1}});
  CHECK(SplitCpusAmongWorkers({0, 1, 2, 3, 4, 5, 6}, 3) == Cpus{{0, 1}, {2, 3}, {4, 5}});
}

TEST_CASE("One worker, or more workers than CPUs, are not pinned", "[launch]") {
  CHECK(SplitCpusAmongWorkers({0, 1, 2, 3}, 1).empty());
  CHECK(SplitCpusAmongWorkers({0, 1}, 3).empty());
  CHECK(SplitCpusAmongWorkers({}, 2).empty());
  CHECK(SplitCpusAmongWorkers({0, 1}, 0).empty());
}

}  // namespace
}  // namespace cairn::launch
