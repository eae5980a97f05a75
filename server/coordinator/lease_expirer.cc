#include "server/coordinator/lease_expirer.h"

#include "common/time_source.h"

namespace cairn {

LeaseExpirer::LeaseExpirer(CoordinatorState* state, absl::Duration period, OnExpired on_expired)
    : state_(state), period_(period), on_expired_(std::move(on_expired)) {
  thread_ = std::thread([this] { Run(); });
}

LeaseExpirer::~LeaseExpirer() { Stop(); }

void LeaseExpirer::Stop() {
  absl::MutexLock lock(&join_mu_);
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void LeaseExpirer::Run() {
  // Sleeps on the monotonic clock: a Notification's timed wait ends at a
  // wall-clock deadline, which a step of the clock moves.
  const absl::Duration stalled_after = state_->lease_timeout() / 2;
  absl::Time last = MonotonicNow();
  while (SleepMonotonic(period_, [this] { return stop_.HasBeenNotified(); })) {
    const absl::Time now = MonotonicNow();
    if (now - last > period_ + stalled_after) state_->ForgiveStall(now - last - period_);
    last = now;
    // The expired members are logged and counted by ExpireLeases itself.
    const std::vector<MemberRecord> expired = state_->ExpireLeases();
    if (!expired.empty() && on_expired_) on_expired_(expired);
  }
}

}  // namespace cairn
