#include "server/coordinator/job_end.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/daemon.h"
#include "common/log.h"
#include "server/coordinator/checkpoint_driver.h"
#include "server/coordinator/coordinator_state.h"

namespace cairn {
namespace {

std::vector<uint32_t> AliveServers(const std::vector<v1::Member>& members) {
  std::vector<uint32_t> alive;
  for (const v1::Member& m : members) {
    if (m.role() == v1::MEMBER_ROLE_SERVER && m.state() == v1::MEMBER_STATE_ALIVE) {
      alive.push_back(m.id());
    }
  }
  return alive;
}

const char* StateWord(v1::JobState state) {
  return state == v1::JOB_STATE_FINISHED ? "finished" : "failed";
}

}  // namespace

JobVerdict JudgeJob(bool started, const std::vector<v1::Member>& members,
                    const std::vector<uint32_t>& unrecoverable_groups,
                    bool end_when_workers_gone) {
  if (!unrecoverable_groups.empty()) {
    return {v1::JOB_STATE_FAILED, kExitDataLost,
            absl::StrCat("replica groups [", absl::StrJoin(unrecoverable_groups, ", "),
                         "] lost every copy and no complete checkpoint covers them: their "
                         "values are gone")};
  }
  if (!started || !end_when_workers_gone) return {};
  std::vector<uint32_t> finished, lost;
  for (const v1::Member& m : members) {
    if (m.role() != v1::MEMBER_ROLE_WORKER) continue;
    switch (m.state()) {
      case v1::MEMBER_STATE_ALIVE:
        return {};  // still training
      case v1::MEMBER_STATE_LEFT:
        finished.push_back(m.id());
        break;
      default:
        lost.push_back(m.id());
    }
  }
  if (finished.empty() && lost.empty()) return {};
  const std::string lost_text =
      lost.empty() ? "" : absl::StrCat("; workers [", absl::StrJoin(lost, ", "), "] were lost");
  if (finished.empty()) {
    return {v1::JOB_STATE_FAILED, kExitAllWorkersLost,
            absl::StrCat("every worker was lost (declared dead: [", absl::StrJoin(lost, ", "),
                         "]) and none finished")};
  }
  return {v1::JOB_STATE_FINISHED, kExitOk,
          absl::StrCat("workers [", absl::StrJoin(finished, ", "), "] finished", lost_text)};
}

JobEnd::JobEnd(CoordinatorState* state, CheckpointDriver* driver, Options options,
               std::atomic<bool>* ended)
    : state_(state),
      driver_(driver),
      options_(options),
      ended_(ended),
      thread_([this] { Watch(); }) {}

JobEnd::~JobEnd() { Stop(); }

void JobEnd::Fail(int exit_code, std::string reason) {
  absl::MutexLock lock(&mu_);
  if (failure_.has_value()) return;
  failure_ = JobVerdict{v1::JOB_STATE_FAILED, exit_code, std::move(reason)};
}

int JobEnd::exit_code() const {
  absl::MutexLock lock(&mu_);
  return exit_code_;
}

void JobEnd::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void JobEnd::Watch() {
  while (!stop_.load()) {
    std::optional<JobVerdict> failure;
    {
      absl::MutexLock lock(&mu_);
      failure = failure_;
    }
    if (failure.has_value()) return End(*failure);
    JobVerdict verdict =
        JudgeJob(state_->ready() && !state_->restoring(), state_->Members(),
                 state_->UnrecoverableGroups(), options_.exit_when_done);
    if (verdict.state == v1::JOB_STATE_FAILED) return End(verdict);
    if (verdict.state == v1::JOB_STATE_FINISHED) {
      LOG_INFO("the job is over: {}", verdict.reason);
      if (driver_ != nullptr) {
        absl::StatusOr<CheckpointDriver::Result> record = driver_->Run(options_.shutdown_grace);
        if (!record.ok()) {
          return End({v1::JOB_STATE_FAILED, kExitFailure,
                      absl::StrCat("the job finished but its final checkpoint failed: ",
                                   record.status().message())});
        }
        LOG_INFO("final checkpoint at clock {} (record {})", record->record.clock(),
                 record->record.id());
      }
      return End(verdict);
    }
    absl::SleepFor(options_.poll);
  }
}

void JobEnd::End(const JobVerdict& verdict) {
  state_->EndJob(verdict.state, verdict.reason);
  if (verdict.state == v1::JOB_STATE_FAILED) {
    LOG_ERROR("the job failed: {}; telling every member to stop (exit code {})", verdict.reason,
              verdict.exit_code);
  } else {
    LOG_INFO("the job {}: telling the servers to stop", StateWord(verdict.state));
  }
  // The servers learn it from their next heartbeat answer, stop serving and
  // leave; the coordinator must answer them until then.
  const absl::Time deadline = absl::Now() + options_.shutdown_grace;
  std::vector<uint32_t> alive = AliveServers(state_->Members());
  while (!alive.empty() && !stop_.load() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    alive = AliveServers(state_->Members());
  }
  if (!alive.empty() && !stop_.load()) {
    LOG_WARN("servers [{}] did not leave within {} (cluster.shutdown_grace); exiting without them",
             absl::StrJoin(alive, ", "), absl::FormatDuration(options_.shutdown_grace));
  }
  {
    absl::MutexLock lock(&mu_);
    exit_code_ = verdict.exit_code;
  }
  ended_->store(true);
}

}  // namespace cairn
