// What the coordinator does when a worker is declared dead (its lease
// expired: a crash, a kill or a partition; a clean leave is not a loss),
// following cluster.on_worker_loss (common/config/job_config.h):
//
//   continue  log the loss with the worker's last reported clock ("its data
//             shard is unfinished from clock N"); the servers drop the worker
//             from the minimum clock when they see the new partition map, and
//             the other workers go on. The loss stays visible in
//             cairn_coordinator_lease_expirations_total{role="worker"}, in
//             cairn_coordinator_members{role="worker",state="dead"} and in
//             the coordinator's closing "job summary" log line.
//   fail      log an error naming the worker and its clock and report that
//             the job must fail; cairn-coordinator then fails the job
//             (job_end.h: the members are told and exit) and exits with
//             kExitWorkerLost, which stops a cairn-launch job or tells the
//             job's scheduler.
//
// Field case B16: a job must never "succeed" silently without a worker.
//
// Thread-safe.
#ifndef CAIRN_SERVER_COORDINATOR_WORKER_LOSS_H_
#define CAIRN_SERVER_COORDINATOR_WORKER_LOSS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/config/job_config.h"
#include "common/daemon.h"
#include "server/coordinator/lease_table.h"

namespace cairn {

class WorkerLossHandler {
 public:
  explicit WorkerLossHandler(WorkerLossPolicy policy) : policy_(policy) {}

  // Logs and records each worker of `expired` (servers are ignored) as the
  // policy says. Returns the cause when the job must fail, else nullopt.
  std::optional<std::string> Handle(const std::vector<MemberRecord>& expired) ABSL_LOCKS_EXCLUDED(mu_);

  // One line for the coordinator's exit: "job summary: workers finished
  // [0, 1]; workers lost [worker 3 at clock 50]; still running []", from
  // `members` (every member ever known) and the losses recorded here.
  std::string SummaryLine(const std::vector<v1::Member>& members) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const WorkerLossPolicy policy_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<uint32_t, int64_t>> lost_ ABSL_GUARDED_BY(mu_);  // (worker, clock)
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_WORKER_LOSS_H_
