// server/coordinator/job_end.h JudgeJob: when a job is finished, failed or
// still running, from its members' records.
#include <catch2/catch.hpp>
#include <vector>

#include "common/daemon.h"
#include "server/coordinator/job_end.h"

namespace cairn {
namespace {

v1::Member Worker(uint32_t id, v1::MemberState state) {
  v1::Member m;
  m.set_role(v1::MEMBER_ROLE_WORKER);
  m.set_id(id);
  m.set_state(state);
  return m;
}

v1::Member Server(uint32_t id, v1::MemberState state) {
  v1::Member m = Worker(id, state);
  m.set_role(v1::MEMBER_ROLE_SERVER);
  return m;
}

}  // namespace

TEST_CASE("a job is finished when no worker is alive and one left cleanly", "[job_end]") {
  const std::vector<v1::Member> members = {Server(0, v1::MEMBER_STATE_ALIVE),
                                           Worker(0, v1::MEMBER_STATE_LEFT),
                                           Worker(1, v1::MEMBER_STATE_LEFT)};
  const JobVerdict v = JudgeJob(true, members, {}, true);
  CHECK(v.state == v1::JOB_STATE_FINISHED);
  CHECK(v.exit_code == 0);
  CHECK(v.reason == "workers [0, 1] finished");
}

TEST_CASE("a lost worker under continue does not fail a job the others finished", "[job_end]") {
  const JobVerdict v = JudgeJob(
      true, {Worker(0, v1::MEMBER_STATE_LEFT), Worker(1, v1::MEMBER_STATE_DEAD)}, {}, true);
  CHECK(v.state == v1::JOB_STATE_FINISHED);
  CHECK(v.reason == "workers [0] finished; workers [1] were lost");
}

TEST_CASE("a job runs while a worker is alive, before the barrier, and without "
          "exit_when_done",
          "[job_end]") {
  CHECK(JudgeJob(true, {Worker(0, v1::MEMBER_STATE_LEFT), Worker(1, v1::MEMBER_STATE_ALIVE)}, {},
                 true)
            .state == v1::JOB_STATE_RUNNING);
  CHECK(JudgeJob(false, {Worker(0, v1::MEMBER_STATE_LEFT)}, {}, true).state ==
        v1::JOB_STATE_RUNNING);
  CHECK(JudgeJob(true, {Worker(0, v1::MEMBER_STATE_LEFT)}, {}, false).state ==
        v1::JOB_STATE_RUNNING);
  CHECK(JudgeJob(true, {Server(0, v1::MEMBER_STATE_ALIVE)}, {}, true).state ==
        v1::JOB_STATE_RUNNING);
}

TEST_CASE("every worker lost fails the job with kExitAllWorkersLost", "[job_end]") {
  const JobVerdict v = JudgeJob(
      true, {Worker(0, v1::MEMBER_STATE_DEAD), Worker(1, v1::MEMBER_STATE_DEAD)}, {}, true);
  CHECK(v.state == v1::JOB_STATE_FAILED);
  CHECK(v.exit_code == kExitAllWorkersLost);
  CHECK(v.reason == "every worker was lost (declared dead: [0, 1]) and none finished");
}

TEST_CASE("unrecoverable replica groups fail the job with kExitDataLost, also without "
          "exit_when_done",
          "[job_end]") {
  const JobVerdict v = JudgeJob(true, {Worker(0, v1::MEMBER_STATE_ALIVE)}, {3, 5}, false);
  CHECK(v.state == v1::JOB_STATE_FAILED);
  CHECK(v.exit_code == kExitDataLost);
  CHECK(v.reason ==
        "replica groups [3, 5] lost every copy and no complete checkpoint covers them: their "
        "values are gone");
}

}  // namespace cairn
