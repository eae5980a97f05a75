#include "worker/client/worker_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/time_source.h"

namespace cairn {

WorkerSession::WorkerSession(CoordinatorChannel* coordinator, uint32_t worker_id,
                             uint64_t incarnation, const v1::JobSpec& job)
    : coordinator_(coordinator),
      worker_id_(worker_id),
      incarnation_(incarnation),
      heartbeat_interval_ms_(job.heartbeat_interval_ms()),
      lease_timeout_ms_(job.lease_timeout_ms()) {}

WorkerSession::~WorkerSession() { StopAndWait(); }

void WorkerSession::StopAndWait() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void WorkerSession::StartHeartbeats(Hooks hooks) {
  thread_ = std::thread([this, hooks = std::move(hooks)] { HeartbeatLoop(hooks); });
}

absl::Status WorkerSession::Lost() const {
  absl::MutexLock lock(&mu_);
  return lost_;
}

void WorkerSession::SetLost(absl::Status reason) {
  LOG_ERROR("{}", reason.message());
  absl::MutexLock lock(&mu_);
  if (lost_.ok()) lost_ = std::move(reason);
}

void WorkerSession::HeartbeatLoop(const Hooks& hooks) {
  const absl::Duration interval = absl::Milliseconds(std::max<int64_t>(heartbeat_interval_ms_, 50));
  const absl::Duration lease = absl::Milliseconds(lease_timeout_ms_);
  // As the servers: the coordinator gone this long means the job is gone.
  const absl::Duration loss_timeout = std::max(absl::Seconds(10), 4 * lease);
  absl::Time last_ok = MonotonicNow();
  bool late_noted = false;  // warned once per gap
  while (!stop_.load()) {
    v1::HeartbeatRequest hb;
    hb.set_role(v1::MEMBER_ROLE_WORKER);
    hb.set_id(worker_id_);
    hb.set_incarnation(incarnation_);
    hb.set_clock(hooks.clock());
    const uint64_t map_version = hooks.map_version();
    hb.set_map_version(map_version);
    absl::StatusOr<v1::HeartbeatResponse> r = coordinator_->Heartbeat(hb, interval * 2);
    if (r.ok() && r->job_state() == v1::JOB_STATE_FAILED) {
      SetLost(absl::CancelledError(
          absl::StrCat("the coordinator ended the job as failed: ", r->job_end_reason())));
      return;
    }
    const absl::Time now = MonotonicNow();
    if (r.ok()) {
      if (now - last_ok > lease / 2) {
        LOG_WARN("the coordinator answered a heartbeat after {} without one (lease {})",
                 absl::FormatDuration(now - last_ok), absl::FormatDuration(lease));
      }
      last_ok = now;
      late_noted = false;
    } else if (absl::IsNotFound(r.status())) {
      SetLost(absl::UnavailableError(absl::StrCat("the coordinator declared worker ", worker_id_,
                                                  " dead: ", r.status().message())));
      return;
    } else if (now - last_ok > loss_timeout) {
      SetLost(absl::UnavailableError(absl::StrCat("lost the coordinator at ",
                                                  coordinator_->address(),
                                                  ": no heartbeat answered for ",
                                                  absl::FormatDuration(loss_timeout))));
      return;
    } else if (!late_noted && now - last_ok > lease / 2) {
      late_noted = true;
      LOG_WARN("no heartbeat answered for {} (lease {}): {}",
               absl::FormatDuration(now - last_ok), absl::FormatDuration(lease),
               r.status().message());
    }
    if (r.ok() && map_version > 0 && r->map_version() > map_version) hooks.on_newer_map();
    for (absl::Duration slept; slept < interval && !stop_.load(); slept += absl::Milliseconds(50)) {
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
}

}  // namespace cairn
