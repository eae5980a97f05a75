#include "server/coordinator/worker_loss.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace cairn {

std::optional<std::string> WorkerLossHandler::Handle(const std::vector<MemberRecord>& expired) {
  std::optional<std::string> fail;
  for (const MemberRecord& m : expired) {
    if (m.role != v1::MEMBER_ROLE_WORKER) continue;
    {
      absl::MutexLock lock(&mu_);
      lost_.emplace_back(m.id, m.clock);
    }
    if (policy_ == WorkerLossPolicy::kFail) {
      LOG_ERROR(
          "worker {} lost at clock {} (its last heartbeat's; lease expired, no clean leave); "
          "cluster.on_worker_loss is fail: failing the job",
          m.id, m.clock);
      if (!fail.has_value()) {
        fail = absl::StrCat("worker ", m.id, " was lost at clock ", m.clock,
                            " and cluster.on_worker_loss is fail");
      }
    } else {
      LOG_WARN(
          "worker {} lost at clock {} (its last heartbeat's; lease expired, no clean leave): its "
          "data shard is unfinished from about that clock; cluster.on_worker_loss is continue: "
          "the job goes on without it",
          m.id, m.clock);
    }
  }
  return fail;
}

std::string WorkerLossHandler::SummaryLine(const std::vector<v1::Member>& members) const {
  std::vector<std::string> finished, lost, running;
  for (const v1::Member& m : members) {
    if (m.role() != v1::MEMBER_ROLE_WORKER) continue;
    if (m.state() == v1::MEMBER_STATE_LEFT) finished.push_back(absl::StrCat(m.id()));
    if (m.state() == v1::MEMBER_STATE_ALIVE) running.push_back(absl::StrCat(m.id()));
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, clock] : lost_) {
      lost.push_back(absl::StrCat("worker ", id, " at clock ", clock));
    }
  }
  return absl::StrCat("job summary: workers finished [", absl::StrJoin(finished, ", "),
                      "]; workers lost [", absl::StrJoin(lost, ", "), "]; still running [",
                      absl::StrJoin(running, ", "), "]");
}

}  // namespace cairn
