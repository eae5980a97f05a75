#include "server/shard/checkpoint_agent.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/backoff.h"
#include "common/coordinator_client.h"
#include "common/killpoint.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/checkpoint/checkpoint_writer.h"
#include "server/shard/shard_metrics.h"

namespace cairn {
namespace {

// How long a report keeps retrying an unreachable coordinator.
constexpr absl::Duration kReportPatience = absl::Seconds(30);

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointAgent>> CheckpointAgent::Start(
    Options options, CoordinatorClient* coordinator, ShardMetrics* metrics) {
  // keep 0: retention follows the coordinator's complete checkpoints.
  ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::CheckpointWriter> writer,
                   checkpoint::CheckpointWriter::Open(options.store_dir, options.server_id, 0));
  // Checkpoints no complete one refers to are from runs that died before
  // completing them: nothing is in flight yet, so they go now.
  absl::StatusOr<v1::ListCheckpointsResponse> records =
      coordinator->ListCheckpoints(absl::Seconds(10));
  if (records.ok()) {
    std::vector<uint64_t> keep;
    for (const v1::CheckpointRecord& r : records->records()) {
      for (const v1::CheckpointPartition& p : r.partitions()) {
        if (p.server_id() == options.server_id) keep.push_back(p.checkpoint_id());
      }
    }
    RETURN_IF_ERROR(Annotate(writer->RetainOnly(keep, /*max_pending=*/0),
                             absl::StrCat("retention in ", options.store_dir)));
  } else {
    LOG_WARN("cannot list complete checkpoints ({}); unreferenced ones in {} stay for now",
             records.status().message(), options.store_dir);
  }
  std::unique_ptr<CheckpointAgent> agent(
      new CheckpointAgent(std::move(options), std::move(writer), coordinator, metrics));
  agent->thread_ = std::thread([a = agent.get()] { a->Run(); });
  return agent;
}

CheckpointAgent::CheckpointAgent(Options options,
                                 std::unique_ptr<checkpoint::CheckpointWriter> writer,
                                 CoordinatorClient* coordinator, ShardMetrics* metrics)
    : options_(std::move(options)),
      writer_(std::move(writer)),
      coordinator_(coordinator),
      metrics_(metrics),
      queue_(options_.max_queued) {}

CheckpointAgent::~CheckpointAgent() { Stop(); }

void CheckpointAgent::Submit(ShardSnapshot snapshot) {
  const int64_t clock = snapshot.closed_before;
  if (!queue_.Push(std::move(snapshot))) {
    LOG_WARN("checkpoint at clock {} dropped: {} still being written{}", clock, queue_.size(),
             queue_.closed() ? " (the agent is stopping)" : "");
    if (metrics_ != nullptr) metrics_->Checkpoint("dropped", 0, 0);
  }
}

void CheckpointAgent::Stop() {
  queue_.Close();
  if (thread_.joinable()) thread_.join();
}

void CheckpointAgent::Run() {
  // After Stop, what was queued is still written.
  while (std::optional<ShardSnapshot> snapshot = queue_.Pop()) {
    const int64_t clock = snapshot->closed_before;
    if (absl::Status s = WriteAndReport(std::move(*snapshot)); !s.ok()) {
      LOG_ERROR("checkpoint at clock {}: {}", clock, s.message());
      if (metrics_ != nullptr) metrics_->Checkpoint("failed", 0, 0);
    }
  }
}

absl::Status CheckpointAgent::WriteAndReport(ShardSnapshot snapshot) {
  const absl::Time start = absl::Now();
  std::vector<checkpoint::PartitionData> partitions;
  partitions.reserve(snapshot.partitions.size());
  for (ShardSnapshot::Partition& p : snapshot.partitions) {
    partitions.push_back({p.table_id, p.partition, std::move(p.rows)});
  }
  checkpoint::WorkerState workers;
  workers.clocks = snapshot.worker_clocks;
  workers.sequence_floors = snapshot.sequence_floors;
  CAIRN_KILLPOINT("checkpoint.before_write");
  ASSIGN_OR_RETURN(checkpoint::Manifest m,
                   writer_->Write(snapshot.closed_before, options_.num_partitions,
                                  options_.tables, std::move(partitions), workers));
  CAIRN_KILLPOINT("checkpoint.after_write");
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  uint64_t bytes = 0;
  v1::ReportCheckpointRequest report;
  report.set_server_id(options_.server_id);
  report.set_clock(m.clock);
  for (const checkpoint::PartitionEntry& e : m.partitions) {
    v1::CheckpointPartition* p = report.add_partitions();
    p->set_table_id(e.table_id);
    p->set_partition(e.partition);
    p->set_server_id(options_.server_id);
    p->set_checkpoint_id(m.id);
    p->set_checksum(e.checksum);
    p->set_num_keys(e.num_keys);
    p->set_bytes(e.bytes);
    bytes += e.bytes;
  }
  LOG_INFO("checkpoint {} at clock {} written to {}: {} partitions, {} bytes in {:.3f}s", m.id,
           m.clock, options_.store_dir, m.partitions.size(), bytes, seconds);
  if (metrics_ != nullptr) metrics_->Checkpoint("ok", seconds, bytes);

  const absl::Time give_up = absl::Now() + kReportPatience;
  constexpr Backoff kBackoff(absl::Milliseconds(100), absl::Seconds(2));
  absl::StatusOr<v1::ReportCheckpointResponse> answer;
  for (int attempt = 0;; ++attempt) {
    answer = coordinator_->ReportCheckpoint(report, absl::Seconds(10));
    if (answer.ok() || !absl::IsUnavailable(answer.status()) || absl::Now() > give_up) break;
    if (queue_.closed()) break;  // shutting down: one try only
    absl::SleepFor(kBackoff.Delay(attempt));
  }
  if (!answer.ok()) {
    return Annotate(answer.status(), absl::StrCat("report checkpoint ", m.id, " at clock ",
                                                  m.clock, " to the coordinator"));
  }
  CAIRN_KILLPOINT("checkpoint.after_report");
  std::vector<uint64_t> keep(answer->keep_ids().begin(), answer->keep_ids().end());
  // Two newer than the newest complete one may still complete (the
  // snapshots queued here); anything older never will.
  return Annotate(writer_->RetainOnly(keep, /*max_pending=*/2), "retention");
}

}  // namespace cairn
