#include "server/coordinator/checkpoint_driver.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "grpcpp/grpcpp.h"
#include "server/coordinator/coordinator_metrics.h"

namespace cairn {
namespace {

struct Target {
  uint32_t id;
  std::string address;
  v1::ParameterService::Stub* stub;
};

// One phase on one server. Each phase may take until the checkpoint's own
// deadline: a commit copies the server's partitions, which takes as long as
// their bytes need (a fixed per-phase limit failed every checkpoint of a
// large shard).
absl::Status Call(const Target& t, v1::CheckpointPhase phase, uint64_t request_id, int64_t clock,
                  absl::Duration hold, absl::Time deadline, int64_t* out_clock) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(
      phase == v1::CHECKPOINT_PHASE_ABORT ? absl::Now() + absl::Seconds(10) : deadline));
  v1::ShardCheckpointRequest request;
  request.set_phase(phase);
  request.set_request_id(request_id);
  request.set_clock(clock);
  request.set_hold_ms(absl::ToInt64Milliseconds(hold));
  v1::ShardCheckpointResponse response;
  grpc::Status s = t.stub->Checkpoint(&context, request, &response);
  if (!s.ok()) {
    return Annotate(FromGrpcStatus(s), absl::StrCat("server ", t.id, " at ", t.address));
  }
  if (out_clock != nullptr) *out_clock = response.clock();
  return absl::OkStatus();
}

}  // namespace

CheckpointDriver::CheckpointDriver(CoordinatorState* state, CheckpointRegistry* registry,
                                   CoordinatorMetrics* metrics, uint64_t after_id,
                                   v1::CheckpointRecord resumed)
    : state_(state),
      registry_(registry),
      metrics_(metrics),
      after_id_(after_id),
      resumed_(std::move(resumed)),
      next_request_(static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()))) {}

CheckpointDriver::~CheckpointDriver() { Stop(); }

v1::ParameterService::Stub* CheckpointDriver::StubFor(const std::string& address) {
  auto& stub = stubs_[address];
  if (stub == nullptr) {
    stub = v1::ParameterService::NewStub(
        MakeChannel(address, state_->job().max_message_bytes()));
  }
  return stub.get();
}

absl::StatusOr<CheckpointDriver::Result> CheckpointDriver::Run(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  // No primary moves from here to the end: the servers chosen below snapshot
  // what they are primary of.
  state_->CheckpointStarted();
  absl::Cleanup ended = [this] { state_->CheckpointEnded(); };
  const v1::PartitionMap map = state_->Map();
  if (!map.ready()) {
    return absl::FailedPreconditionError(
        "checkpoint: the job has not started (start-up barrier not passed)");
  }
  std::set<uint32_t> primaries;
  for (const v1::PartitionAssignment& a : map.assignments()) primaries.insert(a.primary());
  std::vector<Target> targets;
  for (const v1::Member& m : map.servers()) {
    if (!primaries.contains(m.id())) continue;
    if (m.state() != v1::MEMBER_STATE_ALIVE) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint: server ", m.id(), " holds partitions but is not alive"));
    }
    targets.push_back({m.id(), m.address(), StubFor(m.address())});
  }
  const uint64_t request_id = next_request_++;
  const absl::Duration hold = std::max(absl::Seconds(1), timeout);

  auto abort_all = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      (void)Call(targets[i], v1::CHECKPOINT_PHASE_ABORT, request_id, 0, hold, deadline, nullptr);
    }
  };
  auto fail = [&](absl::Status s) {
    if (metrics_ != nullptr) metrics_->CheckpointFailed();
    LOG_WARN("checkpoint request {} failed: {}", request_id, s.message());
    return s;
  };
  int64_t cut = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    int64_t boundary = 0;
    absl::Status s = Call(targets[i], v1::CHECKPOINT_PHASE_PREPARE, request_id, 0, hold,
                          deadline, &boundary);
    if (!s.ok()) {
      abort_all(i);
      return fail(Annotate(s, "checkpoint prepare"));
    }
    cut = std::max(cut, boundary);
  }
  // Looked up before this request commits anything, so a record found is
  // an earlier one.
  std::optional<v1::CheckpointRecord> earlier;
  if (resumed_.id() != 0 && resumed_.clock() == cut) {
    earlier = resumed_;
  } else {
    earlier = registry_->Find(cut, after_id_);
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    absl::Status s =
        Call(targets[i], v1::CHECKPOINT_PHASE_COMMIT, request_id, cut, hold, deadline, nullptr);
    if (!s.ok()) {
      abort_all(targets.size());
      return fail(Annotate(s, absl::StrCat("checkpoint commit at clock ", cut)));
    }
  }
  LOG_INFO("checkpoint request {}: cut at clock {} on {} servers", request_id, cut,
           targets.size());
  if (earlier.has_value()) {
    LOG_INFO("checkpoint request {}: record {} holds clock {} already (no iteration has ended "
             "since it was cut); answering with it",
             request_id, earlier->id(), cut);
    return Result{*std::move(earlier), true};
  }
  absl::StatusOr<v1::CheckpointRecord> record =
      registry_->WaitComplete(cut, after_id_, deadline);
  if (!record.ok()) return fail(record.status());
  LOG_INFO("checkpoint request {} complete: record {} at clock {}", request_id, record->id(),
           record->clock());
  return Result{*std::move(record), false};
}

void CheckpointDriver::StartPeriodic(absl::Duration every, absl::Duration timeout) {
  periodic_ = std::thread([this, every, timeout] {
    auto stopped = [this] { return stop_.HasBeenNotified(); };
    while (SleepMonotonic(every, stopped, absl::Milliseconds(100))) {
      if (!state_->ready()) continue;
      (void)Run(timeout);  // logs its outcome
    }
  });
}

void CheckpointDriver::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (periodic_.joinable()) periodic_.join();
}

}  // namespace cairn
