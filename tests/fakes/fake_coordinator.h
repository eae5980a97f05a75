// The coordinator in memory, in place of the worker client's gRPC client
// (common/coordinator_channel.h), for unit tests of the client.
//
// It registers workers (the requested id, incarnation 1 then +1 per
// registration again), hands out the job and the partition map a test set,
// and records heartbeats and leaves. SetMap publishes a new map to long polls.
//
// Thread-safe.
#ifndef CAIRN_TESTS_FAKES_FAKE_COORDINATOR_H_
#define CAIRN_TESTS_FAKES_FAKE_COORDINATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/coordinator_channel.h"

namespace cairn {

class FakeCoordinator final : public CoordinatorChannel {
 public:
  FakeCoordinator(v1::JobSpec job, v1::PartitionMap map)
      : job_(std::move(job)), map_(std::move(map)) {}

  const std::string& address() const override { return address_; }

  // Publishes `map` (its version must exceed the current one's).
  void SetMap(v1::PartitionMap map) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    map_ = std::move(map);
  }

  // The next `count` GetPartitionMap calls answer `status`.
  void FailMapReads(absl::Status status, int count = 1) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < count; ++i) map_failures_.push_back(status);
  }

  // Every later GetPartitionMap call takes `delay` before it answers (a
  // coordinator slow to answer during a failover under load).
  void DelayMapReads(absl::Duration delay) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    map_delay_ = delay;
  }

  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request, absl::Time) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const uint32_t id = request.requested_id() >= 0 ? request.requested_id() : 0;
    if (id >= job_.num_workers()) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker id ", id, " is out of range: the job has ", job_.num_workers()));
    }
    v1::RegisterWorkerResponse response;
    response.set_worker_id(id);
    response.set_incarnation(++incarnations_[id]);
    *response.mutable_job() = job_;
    *response.mutable_map() = map_;
    return response;
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                  absl::Duration) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++heartbeats_;
    last_heartbeat_ = request;
    if (!heartbeat_error_.ok()) return heartbeat_error_;
    v1::HeartbeatResponse response;
    response.set_map_version(map_.version());
    if (!failed_reason_.empty()) {
      response.set_job_state(v1::JOB_STATE_FAILED);
      response.set_job_end_reason(failed_reason_);
    }
    return response;
  }

  // Every later heartbeat answers `status` (OK: answered again).
  void AnswerHeartbeats(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    heartbeat_error_ = std::move(status);
  }
  // Every later heartbeat answers that the job failed, for `reason`.
  void FailJob(std::string reason) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    failed_reason_ = std::move(reason);
  }
  v1::HeartbeatRequest last_heartbeat() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return last_heartbeat_;
  }

  absl::StatusOr<v1::GetPartitionMapResponse> GetPartitionMap(absl::Duration) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      ++map_reads_;  // counted when asked
      delay = map_delay_;
    }
    absl::SleepFor(delay);  // without the lock: heartbeats go on meanwhile
    absl::MutexLock lock(&mu_);
    if (!map_failures_.empty()) {
      absl::Status s = map_failures_.front();
      map_failures_.erase(map_failures_.begin());
      return s;
    }
    v1::GetPartitionMapResponse response;
    *response.mutable_map() = map_;
    return response;
  }

  absl::StatusOr<v1::GetPartitionMapResponse> WatchPartitionMap(uint64_t known_version,
                                                                absl::Duration wait) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto newer = [this, known_version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return map_.version() > known_version;
    };
    mu_.AwaitWithTimeout(absl::Condition(&newer), wait);
    v1::GetPartitionMapResponse response;
    *response.mutable_map() = map_;
    return response;
  }

  absl::Status Leave(const v1::LeaveRequest& request, absl::Duration) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    leaves_.push_back(request);
    return absl::OkStatus();
  }

  int heartbeats() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return heartbeats_;
  }
  int map_reads() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return map_reads_;
  }
  std::vector<v1::LeaveRequest> leaves() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return leaves_;
  }

 private:
  const std::string address_ = "fake-coordinator";
  const v1::JobSpec job_;

  mutable absl::Mutex mu_;
  v1::PartitionMap map_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> map_failures_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, uint64_t> incarnations_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::LeaveRequest> leaves_ ABSL_GUARDED_BY(mu_);
  absl::Status heartbeat_error_ ABSL_GUARDED_BY(mu_);
  std::string failed_reason_ ABSL_GUARDED_BY(mu_);
  v1::HeartbeatRequest last_heartbeat_ ABSL_GUARDED_BY(mu_);
  int heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration map_delay_ ABSL_GUARDED_BY(mu_);
  int map_reads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

#endif  // CAIRN_TESTS_FAKES_FAKE_COORDINATOR_H_
