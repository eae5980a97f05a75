#include "server/shard/incarnation.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"
#include "common/coordinator_client.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/shard/cold_rows.h"
#include "common/time_source.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/job_shapes.h"
#include "server/shard/checkpoint_agent.h"
#include "server/shard/initial_rows.h"
#include "server/shard/replica_transfers.h"
#include "server/shard/shard.h"
#include "server/shard/shard_metrics.h"

namespace cairn {
namespace {

// Sleeps `d` in steps of 20 ms, returning early once `stop` is set.
void SleepUnlessStopped(absl::Duration d, const std::atomic<bool>& stop) {
  for (absl::Duration slept; slept < d && !stop.load(); slept += absl::Milliseconds(20)) {
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace

Incarnation::Incarnation(const Context& context, const v1::RegisterServerResponse& registered,
                         absl::Time registering)
    : context_(context),
      registered_(registered),
      server_id_(registered.server_id()),
      registering_(registering) {}

absl::StatusOr<std::unique_ptr<Incarnation>> Incarnation::Create(
    const Context& context, const v1::RegisterServerResponse& registered,
    absl::Time registering) {
  std::unique_ptr<Incarnation> self(new Incarnation(context, registered, registering));
  const v1::JobSpec& job = registered.job();
  const uint32_t id = self->server_id_;
  self->shard_ = std::make_shared<Shard>(id, job, context.metrics);
  Shard& shard = *self->shard_;
  if (std::any_of(job.tables().begin(), job.tables().end(),
                  [](const v1::TableSpec& t) { return t.cold_tier(); })) {
    static std::atomic<int> incarnations{0};
    ASSIGN_OR_RETURN(std::unique_ptr<ColdRowStore> cold,
                     ColdRowStore::Open(absl::StrCat(context.cold_dir, "/server-", id, "-",
                                                     incarnations.fetch_add(1)),
                                        context.cold_memory_bytes));
    shard.SetColdStore(std::move(cold));
  }
  // Fencing: this server stops serving a quarter of a lease before the
  // coordinator could declare it dead and promote a backup; each renewal
  // moves the deadline on, counted from when the renewal was sent. With one
  // copy no backup can take over, so a server never fences itself (a
  // coordinator outage must not stop the data path).
  if (job.replication() > 1) {
    shard.SetLeaseDeadline(registering + absl::Milliseconds(job.lease_timeout_ms()) * 3 / 4);
  }
  if (!job.checkpoint().dir().empty()) {
    ASSIGN_OR_RETURN(std::vector<checkpoint::TableShape> shapes, checkpoint::JobTableShapes(job));
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointAgent> agent,
                     CheckpointAgent::Start({checkpoint::ServerStoreDir(job.checkpoint().dir(), id),
                                             id, job.num_partitions(), std::move(shapes)},
                                            context.coordinator, context.metrics));
    self->agent_ = std::move(agent);
    shard.SetCheckpointSink(job.checkpoint().every_clocks(),
                            [agent = self->agent_](ShardSnapshot s) { agent->Submit(std::move(s)); });
  }
  self->transfers_ = std::make_shared<ReplicaTransfers>(
      id, &shard, context.coordinator, context.config->rpc.max_message_bytes,
      context.config->rpc.deadline, context.config->cluster.lease_timeout);
  shard.SetJoinerSink([transfers = self->transfers_](uint32_t group, uint32_t joiner) {
    transfers->SendTo(group, joiner);
  });
  ASSIGN_OR_RETURN(std::optional<InitialState> initial, MakeInitialState(job));
  if (initial.has_value()) {
    LOG_INFO("server {} starts its partitions from {}", id, initial->source);
    shard.SetInitialRows(initial->loader, initial->start_clock);
  }
  if (!job.checkpoint().dir().empty()) {
    self->restore_reader_ = std::make_shared<CheckpointPartitionReader>(job.checkpoint().dir());
    shard.SetRestoreLoader([coordinator = context.coordinator, reader = self->restore_reader_](
                               uint64_t record_id, const v1::TableSpec& table,
                               uint32_t partition) -> absl::StatusOr<RestoredRows> {
      ASSIGN_OR_RETURN(v1::ListCheckpointsResponse list,
                       coordinator->ListCheckpoints(absl::Seconds(10)));
      for (const v1::CheckpointRecord& r : list.records()) {
        if (r.id() != record_id) continue;
        ASSIGN_OR_RETURN(PartitionRows rows, reader->Read(r, table, partition));
        return RestoredRows{std::move(rows), r.clock()};
      }
      return absl::NotFoundError(
          absl::StrCat("checkpoint record ", record_id, " is not among the coordinator's"));
    });
  }
  return self;
}

Incarnation::~Incarnation() { (void)Stop(); }

absl::Status Incarnation::Begin(std::atomic<bool>* must_stop) {
  must_stop_ = must_stop;
  // The lease is renewed from the start: installing the first map loads a
  // resumed checkpoint or an init_from file, which takes as long as its
  // bytes need, and the coordinator must not declare this server dead
  // meanwhile. Requests are refused until the map is installed (not ready).
  heartbeats_ = std::thread([this] { RenewLeases(); });
  if (absl::Status s = shard_->InstallMap(registered_.map()); !s.ok()) {
    stop_.store(true);
    heartbeats_.join();
    return s;
  }
  auto attached = std::make_shared<ParameterService::Attached>();
  attached->shard = shard_;
  attached->on_replica_installed = [transfers = transfers_](uint32_t group) {
    transfers->ReportReady(group);
  };
  attached_ = std::move(attached);
  context_.service->Attach(attached_);
  watcher_ = std::thread([this] { WatchMap(); });
  expirer_ = std::thread([this] { ExpireWaiters(); });
  if (context_.metrics != nullptr) table_metrics_ = std::thread([this] { RefreshTableMetrics(); });
  return absl::OkStatus();
}

void Incarnation::End(IncarnationEnd end) {
  end_.store(end);
  if (must_stop_ != nullptr) must_stop_->store(true);
}

bool Incarnation::JobEnded(v1::JobState state, const std::string& reason) {
  if (state != v1::JOB_STATE_FINISHED && state != v1::JOB_STATE_FAILED) return false;
  // Heartbeat and watch threads may both see it: the first one reports.
  if (job_ended_.exchange(true)) return true;
  if (state == v1::JOB_STATE_FINISHED) {
    LOG_INFO("the coordinator announced the job finished: server {} stops", server_id_);
    End(IncarnationEnd::kJobFinished);
  } else {
    {
      absl::MutexLock lock(&reason_mu_);
      job_end_reason_ = reason;
    }
    LOG_ERROR("the coordinator ended the job as failed ({}): server {} stops", reason,
              server_id_);
    End(IncarnationEnd::kJobFailed);
  }
  return true;
}

void Incarnation::RenewLeases() {
  const v1::JobSpec& job = registered_.job();
  const bool fencing = job.replication() > 1;
  const absl::Duration heartbeat = absl::Milliseconds(job.heartbeat_interval_ms());
  const absl::Duration lease = absl::Milliseconds(job.lease_timeout_ms());
  const absl::Duration fence = lease * 3 / 4;
  const absl::Duration loss_timeout = std::max(absl::Seconds(10), 4 * lease);
  // Lease arithmetic on the monotonic clock: a step of the wall clock must
  // neither fence this server nor make it give up on the coordinator.
  absl::Time last_ok = MonotonicNow();
  while (!stop_.load()) {
    v1::HeartbeatRequest hb;
    hb.set_role(v1::MEMBER_ROLE_SERVER);
    hb.set_id(server_id_);
    hb.set_map_version(shard_->map_version());
    const absl::Time sent = MonotonicNow();
    absl::StatusOr<v1::HeartbeatResponse> r = context_.coordinator->Heartbeat(hb, heartbeat);
    if (r.ok()) {
      last_ok = MonotonicNow();
      if (fencing) shard_->SetLeaseDeadline(sent + fence);
      if (JobEnded(r->job_state(), r->job_end_reason())) return;
    } else if (absl::IsNotFound(r.status())) {
      // Declared dead: a backup may serve this server's groups now, with
      // pushes this server never saw. Refuse everything from this moment.
      LOG_ERROR("the coordinator declared server {} dead ({})", server_id_, r.status().message());
      shard_->SetLeaseDeadline(absl::InfinitePast());
      End(IncarnationEnd::kDeclaredDead);
      return;
    } else if (MonotonicNow() - last_ok > loss_timeout) {
      LOG_ERROR("lost the coordinator at {}: no heartbeat answered for {}",
                context_.config->cluster.coordinator, absl::FormatDuration(loss_timeout));
      End(IncarnationEnd::kLostCoordinator);
      return;
    }
    SleepUnlessStopped(heartbeat, stop_);
  }
}

void Incarnation::WatchMap() {
  // The newest map received before the start-up barrier: the shard installs
  // no map that is not ready, so its own version stays 0 until then, and
  // watching from it would return at once, thousands of times a second.
  uint64_t waiting_version = 0;
  while (!stop_.load()) {
    absl::StatusOr<v1::GetPartitionMapResponse> r = context_.coordinator->WatchPartitionMap(
        std::max(shard_->map_version(), waiting_version), absl::Seconds(1));
    if (!r.ok()) {
      SleepUnlessStopped(absl::Milliseconds(200), stop_);
      continue;
    }
    if (JobEnded(r->job_state(), r->job_end_reason())) return;
    if (!r->map().ready()) waiting_version = std::max(waiting_version, r->map().version());
    if (absl::Status s = shard_->InstallMap(r->map()); !s.ok()) {
      LOG_ERROR("cannot install partition map version {}: {}", r->map().version(), s.message());
      if (r->map().ready() && shard_->map_version() == 0) {  // no state to serve: give up
        End(IncarnationEnd::kFailed);
        return;
      }
    }
  }
}

void Incarnation::ExpireWaiters() {
  while (!stop_.load()) {
    shard_->ExpireWaiters(MonotonicNow());
    absl::SleepFor(absl::Milliseconds(50));
  }
}

void Incarnation::RefreshTableMetrics() {
  constexpr absl::Duration kEvery = absl::Seconds(2);
  while (!stop_.load()) {
    v1::StatsResponse stats;
    shard_->Stats(&stats, /*primary_keys=*/false);  // no pass over every row
    context_.metrics->Tables(stats);
    for (absl::Duration slept; slept < kEvery && !stop_.load(); slept += absl::Milliseconds(50)) {
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
}

absl::StatusOr<IncarnationEnd> Incarnation::Stop(absl::Duration grace) {
  if (stopped_) return end_.load();
  stopped_ = true;
  stop_.store(true);
  context_.service->Attach(nullptr);
  shard_->Shutdown();  // parked pulls answer UNAVAILABLE now
  if (heartbeats_.joinable()) heartbeats_.join();
  if (watcher_.joinable()) watcher_.join();
  if (expirer_.joinable()) expirer_.join();
  if (table_metrics_.joinable()) table_metrics_.join();
  if (transfers_ != nullptr) transfers_->Stop();  // null when Create failed early
  if (agent_ != nullptr) agent_->Stop();  // finishes the checkpoints already taken
  // Requests that started before the service let go hold `attached_` until
  // they are answered.
  const absl::Time deadline = absl::Now() + grace;
  while (attached_ != nullptr && attached_.use_count() > 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (attached_ != nullptr && attached_.use_count() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", server_id_, ": ", attached_.use_count() - 1,
        " requests still running ", absl::FormatDuration(grace), " after it stopped serving"));
  }
  attached_.reset();
  return end_.load();
}

}  // namespace cairn
