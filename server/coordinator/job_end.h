// How a job ends (docs/deploy.md, "Job lifecycle").
//
// Finished: every worker registered at least once (the start-up barrier
// passed) and none is alive any more, at least one of them having left
// cleanly (a lost worker under on_worker_loss: continue does not stop the
// others). With cluster.exit_when_done the coordinator then takes a final
// checkpoint (when the job checkpoints), announces FINISHED in its
// heartbeat answers, waits for the servers to leave, and exits 0.
//
// Failed: the job cannot go on, and the coordinator exits non-zero naming
// the cause after announcing FAILED, so the servers and workers exit too
// (kExitJobFailed):
//   - every worker was lost (declared dead; none left cleanly): kExitAllWorkersLost
//   - a replica group lost every copy with no checkpoint to restore it from:
//     kExitDataLost
//   - Fail() from elsewhere: a worker lost under on_worker_loss: fail
//     (kExitWorkerLost), the start-up barrier not passed in time
//     (kExitUnreachable).
// A job fails on its own verdict whether or not exit_when_done is set;
// every worker lost ends the job only with exit_when_done (without it,
// workers may come later).
#ifndef CAIRN_SERVER_COORDINATOR_JOB_END_H_
#define CAIRN_SERVER_COORDINATOR_JOB_END_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"
#include "cairn/v1/types.pb.h"

namespace cairn {

class CheckpointDriver;
class CoordinatorState;

// The verdict on a job from its members' records.
struct JobVerdict {
  v1::JobState state = v1::JOB_STATE_RUNNING;
  int exit_code = 0;   // the coordinator's, for FINISHED (0) and FAILED
  std::string reason;  // FAILED: the cause; FINISHED: which workers finished
};

// Pure. `started`: the start-up barrier passed and no restored state waits
// for its members. `members`: every member ever registered.
// `unrecoverable_groups`: replica groups with no live copy and no
// checkpoint to restore them from. `end_when_workers_gone`: whether a job
// with no live worker ends (cluster.exit_when_done).
JobVerdict JudgeJob(bool started, const std::vector<v1::Member>& members,
                    const std::vector<uint32_t>& unrecoverable_groups,
                    bool end_when_workers_gone);

// Watches the job from a thread of its own and ends it as above. Thread-safe.
class JobEnd {
 public:
  struct Options {
    bool exit_when_done = true;                         // cluster.exit_when_done
    absl::Duration shutdown_grace = absl::Seconds(30);  // final checkpoint; servers leaving
    absl::Duration poll = absl::Milliseconds(100);      // how often the verdict is taken
  };
  // `state` must outlive this; `driver` may be null (no checkpoints) or
  // must outlive this. Once the job has ended (the servers left, or the
  // grace passed) sets `*ended`, which ends the coordinator's main wait.
  JobEnd(CoordinatorState* state, CheckpointDriver* driver, Options options,
         std::atomic<bool>* ended);
  ~JobEnd();  // Stop()

  // Ends the job as failed with `exit_code` (1..127) and `reason`; the
  // first failure wins. Returns at once; the thread announces it.
  void Fail(int exit_code, std::string reason) ABSL_LOCKS_EXCLUDED(mu_);

  // The coordinator's exit code once `*ended` is set; 0 before.
  int exit_code() const ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the watch (a termination signal): returns once the thread is done.
  void Stop();

 private:
  void Watch();
  // Announces `verdict`, waits for the servers to leave (up to the grace),
  // records the exit code and sets `*ended_`.
  void End(const JobVerdict& verdict);

  CoordinatorState* const state_;
  CheckpointDriver* const driver_;
  const Options options_;
  std::atomic<bool>* const ended_;
  std::atomic<bool> stop_{false};

  mutable absl::Mutex mu_;
  std::optional<JobVerdict> failure_ ABSL_GUARDED_BY(mu_);
  int exit_code_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_JOB_END_H_
