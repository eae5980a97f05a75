// Takes checkpoints on demand (cairnctl checkpoint) and every
// `checkpoint.every`, by a two-phase protocol over the servers
// (shard.proto, CheckpointPhase), so the cut is one clock on every server:
//
//   1. PREPARE every primary: each holds at its current iteration boundary
//      B_i (it closes no further iteration) and answers B_i.
//   2. C = max B_i. COMMIT C to every server: each closes iterations up to C
//      (the laggards need only clocks their workers already sent), snapshots
//      exactly there, lets go, and writes and reports in the background.
//   3. Wait until the registry holds the record at C.
// A failure in 1 or 2 sends ABORT to the servers already held; a server also
// lets go by itself when the hold outlives its timeout, so a lost
// coordinator never stalls training. Periodic checkpoints by clock
// (`every_clocks`) need no protocol: every server snapshots at the same
// multiples of N on its own.
#ifndef CAIRN_SERVER_COORDINATOR_CHECKPOINT_DRIVER_H_
#define CAIRN_SERVER_COORDINATOR_CHECKPOINT_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "server/coordinator/checkpoint_registry.h"
#include "server/coordinator/coordinator_state.h"

namespace cairn {

// Thread-safe; one checkpoint runs at a time.
class CheckpointDriver {
 public:
  // `state`, `registry` and `metrics` (may be null) must outlive this.
  // Records with ids <= `after_id` belong to an earlier timeline (a resume
  // from an older checkpoint) and never answer a request, except `resumed`
  // (the record the job resumed from; id 0: none).
  CheckpointDriver(CoordinatorState* state, CheckpointRegistry* registry,
                   CoordinatorMetrics* metrics, uint64_t after_id,
                   v1::CheckpointRecord resumed);
  ~CheckpointDriver();

  // What Run answers: the record of the checkpoint at the cut, and whether
  // it was complete before the request (no iteration ended since an earlier
  // checkpoint, or the one the job resumed from, was cut there: the servers
  // write nothing new and that record answers).
  struct Result {
    v1::CheckpointRecord record;
    bool earlier = false;
  };

  // Runs one checkpoint and waits for its record until `timeout` has passed;
  // logs the request's outcome. Errors: FailedPrecondition (job not started, a primary not alive, a
  // server held by another request), Unavailable (a server unreachable),
  // DeadlineExceeded (not complete in time, naming missing partitions).
  absl::StatusOr<Result> Run(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Calls Run every `every` on a thread until Stop(); failures are logged.
  void StartPeriodic(absl::Duration every, absl::Duration timeout);
  void Stop();

 private:
  v1::ParameterService::Stub* StubFor(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CoordinatorState* const state_;
  CheckpointRegistry* const registry_;
  CoordinatorMetrics* const metrics_;
  const uint64_t after_id_;
  const v1::CheckpointRecord resumed_;

  absl::Mutex mu_;  // one checkpoint at a time
  uint64_t next_request_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<v1::ParameterService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);

  absl::Notification stop_;
  std::thread periodic_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_CHECKPOINT_DRIVER_H_
