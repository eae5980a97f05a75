// What a starting coordinator does with the stores on disk
// (server/coordinator/coordinator_disk.h), with real RocksDB stores: one
// shared store by default, restore of the same job, refusal of another
// job's state, and the drops (--discard-state, a resume).
#include "server/coordinator/coordinator_disk.h"

#include <catch2/catch.hpp>

#include "server/coordinator/checkpoint_registry.h"
#include "server/coordinator/coordinator_state.h"
#include "tests/fakes/fake_time_source.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

JobConfig Config(const std::string& yaml) {
  absl::StatusOr<JobConfig> c = ParseJobConfig(yaml, "job.yaml");
  INFO(c.status().message());
  REQUIRE(c.ok());
  return *std::move(c);
}

std::string NewDir() {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("coordinator_disk_test");
  REQUIRE(dir.ok());
  return *dir;
}

PersistedState StateOf(const std::string& hash, uint64_t version) {
  PersistedState s;
  s.job.set_config_hash(hash);
  s.map.set_version(version);
  s.members.resize(3);
  return s;
}

TEST_CASE("the stored state is restored for the same config hash, else refused or dropped",
          "[coordinator][restore]") {
  v1::JobSpec job;
  job.set_config_hash("1111111111111111");
  CHECK(*DecideStoredState(std::nullopt, job, false, false, "d") == StoredStateAction::kNone);
  CHECK(*DecideStoredState(StateOf("1111111111111111", 4), job, false, false, "d") ==
        StoredStateAction::kRestore);
  CHECK(*DecideStoredState(StateOf("1111111111111111", 4), job, false, true, "d") ==
        StoredStateAction::kDiscard);
  CHECK(*DecideStoredState(StateOf("2222222222222222", 4), job, /*resume=*/true, false, "d") ==
        StoredStateAction::kDiscard);
  const absl::StatusOr<StoredStateAction> refused =
      DecideStoredState(StateOf("2222222222222222", 9), job, false, false, "/x/state");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(refused.status().message()) ==
        "/x/state holds the coordinator state of another job: config hash 2222222222222222 (map "
        "version 9, 3 members), while this config's hash is 1111111111111111. A coordinator "
        "resumes only the job it stored; to start this one anyway, run with --discard-state "
        "(drops the stored members and map, keeps checkpoint records) or set cluster.state_dir "
        "elsewhere");
}

TEST_CASE("by default the state and the checkpoint records share one store, a second start "
          "restores, another config is refused while nothing changes",
          "[coordinator][restore]") {
  const std::string dir = NewDir();
  const std::string yaml = "cluster: {servers: 1, workers: 1}\ncheckpoint: {dir: " + dir +
                           "/ckpt}\n";
  const JobConfig config = Config(yaml);
  CHECK(config.cluster.state_dir == dir + "/ckpt/coordinator");
  {
    v1::JobSpec job = ToJobSpec(config);
    absl::StatusOr<CoordinatorDisk> disk = OpenCoordinatorDisk(config, false, &job);
    INFO(disk.status().message());
    REQUIRE(disk.ok());
    REQUIRE(disk->records != nullptr);
    CHECK(disk->state == disk->records.get());  // one RocksDB
    CHECK(disk->own_state == nullptr);
    CHECK(disk->action == StoredStateAction::kNone);
    auto registry = CheckpointRegistry::Open(disk->records.get(), 1, 4, 3, nullptr);
    REQUIRE(registry.ok());
    CHECK((*registry)->List().empty());

    // While this coordinator holds the store, another start is refused.
    v1::JobSpec other_job = ToJobSpec(config);
    absl::StatusOr<CoordinatorDisk> second = OpenCoordinatorDisk(config, false, &other_job);
    REQUIRE_FALSE(second.ok());
    CHECK_THAT(std::string(second.status().message()),
               Catch::Contains(dir + "/ckpt/coordinator") &&
                   Catch::Contains("held by another live process"));

    FakeTimeSource time;
    CoordinatorState state(job, &time, nullptr, disk->state);
    REQUIRE(state.RegisterServer(-1, "127.0.0.1:7000", "").ok());
  }
  {
    v1::JobSpec job = ToJobSpec(config);
    absl::StatusOr<CoordinatorDisk> disk = OpenCoordinatorDisk(config, false, &job);
    REQUIRE(disk.ok());
    CHECK(disk->action == StoredStateAction::kRestore);
    REQUIRE(disk->stored.has_value());
    CHECK(disk->stored->map.version() == 2);
    REQUIRE(disk->stored->members.size() == 1);
    CHECK(disk->stored->members[0].address == "127.0.0.1:7000");
  }
  const JobConfig other = Config(yaml + "rpc: {deadline: 7s}\n");
  v1::JobSpec other_job = ToJobSpec(other);
  absl::StatusOr<CoordinatorDisk> refused = OpenCoordinatorDisk(other, false, &other_job);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("config hash " + config.config_hash) &&
                 Catch::Contains("this config's hash is " + other.config_hash));
  // --discard-state drops it; nothing is left for the next start.
  absl::StatusOr<CoordinatorDisk> fresh = OpenCoordinatorDisk(other, true, &other_job);
  REQUIRE(fresh.ok());
  CHECK(fresh->action == StoredStateAction::kDiscard);
  auto raw = fresh->state->Get(kStateKey);
  REQUIRE(raw.ok());
  CHECK_FALSE(raw->has_value());
}

TEST_CASE("a state_dir of its own is a store of its own, none keeps nothing",
          "[coordinator][restore]") {
  const std::string dir = NewDir();
  const JobConfig config = Config("cluster: {state_dir: " + dir +
                                  "/state}\ncheckpoint: {dir: " + dir + "/ckpt}\n");
  v1::JobSpec job = ToJobSpec(config);
  absl::StatusOr<CoordinatorDisk> disk = OpenCoordinatorDisk(config, false, &job);
  REQUIRE(disk.ok());
  REQUIRE(disk->own_state != nullptr);
  CHECK(disk->state == disk->own_state.get());
  CHECK(disk->state->dir() == dir + "/state");
  CHECK(disk->records->dir() == dir + "/ckpt/coordinator");

  const JobConfig none = Config("cluster: {state_dir: none}\n");
  v1::JobSpec none_job = ToJobSpec(none);
  absl::StatusOr<CoordinatorDisk> nothing = OpenCoordinatorDisk(none, false, &none_job);
  REQUIRE(nothing.ok());
  CHECK(nothing->state == nullptr);
  CHECK(nothing->records == nullptr);
}

TEST_CASE("a damaged stored state is refused, naming the store and --discard-state",
          "[coordinator][restore]") {
  const std::string dir = NewDir();
  const JobConfig config = Config("cluster: {state_dir: " + dir + "/state}\n");
  {
    auto store = CoordinatorStore::Open(dir + "/state", true);
    REQUIRE(store.ok());
    REQUIRE((*store)->Put(kStateKey, "not a state value").ok());
  }
  v1::JobSpec job = ToJobSpec(config);
  absl::StatusOr<CoordinatorDisk> disk = OpenCoordinatorDisk(config, false, &job);
  REQUIRE_FALSE(disk.ok());
  CHECK(disk.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(disk.status().message()),
             Catch::Contains(dir + "/state") && Catch::Contains("--discard-state"));
  CHECK(OpenCoordinatorDisk(config, true, &job).ok());
}

}  // namespace
}  // namespace cairn
