// ClientImpl's consistency side (client.h): serving pulls from the
// worker-side cache (row_cache.h) and recording what each read saw,
// invalidating pushed keys (read-my-writes), the ClientStats counters, and
// joining a running job at the servers' minimum clock.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "worker/client/client_impl.h"
#include "worker/client/internal/op.h"

namespace cairn {
namespace {

constexpr int64_t kNoClock = std::numeric_limits<int64_t>::max();

}  // namespace

absl::Status ClientImpl::JoinAtMinimum(absl::Time deadline) {
  std::shared_ptr<const Servers> servers = this->servers();
  int64_t start = clock_.load();
  for (const auto& [id, channel] : servers->channels) {
    if (!servers->alive.contains(id)) continue;  // a dead server takes no clocks
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + options_.rpc_deadline)));
      v1::ClockRequest request;
      request.set_map_version(servers->router.version());
      request.set_server(id);
      request.set_worker_id(worker_id_);
      request.set_incarnation(incarnation_);
      request.set_clock(clock_.load());
      v1::ClockResponse response;
      const grpc::Status s = ClockAndWait(*channel, &context, request, &response);
      if (s.ok()) {
        start = std::max(start, response.min_clock());
        break;
      }
      // The server may not have installed the map that lists this worker yet.
      const bool not_yet = s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
                           s.error_code() == grpc::StatusCode::UNAVAILABLE;
      if (!not_yet || absl::Now() + absl::Milliseconds(50) >= deadline) {
        return Annotate(FromGrpcStatus(s), absl::StrCat("joining at server ", id,
                                                        "'s minimum clock"));
      }
      {
        // The job failed or the coordinator is gone meanwhile: no retry helps.
        if (absl::Status lost = Lost(); !lost.ok()) return lost;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  clock_.store(start);
  // The worker that completes the start-up barrier also sees a ready map; it
  // starts at 0 like the others, so only a real late start is worth a line.
  if (start > 0) LOG_INFO("worker {} joined a running job at clock {}", worker_id_, start);
  return absl::OkStatus();
}

ClientStats ClientImpl::Stats() const {
  ClientStats s;
  s.pulls = pulls_.load();
  s.reads = reads_.load();
  s.cache_hits = cache_hits_.load();
  s.cache_misses = cache_misses_.load();
  s.cache_bytes = cache_.bytes();
  s.max_read_staleness = staleness_max_.load();
  s.mean_read_staleness =
      s.reads == 0 ? 0.0 : static_cast<double>(staleness_sum_.load()) / static_cast<double>(s.reads);
  s.pull_seconds = static_cast<double>(pull_micros_.load()) * 1e-6;
  s.shared_memory_regions = shared_memory_->regions.load();
  s.shared_memory_requests = shared_memory_->requests.load();
  s.shared_memory_bytes = shared_memory_->bytes.load();
  s.pulls_with_push = shared_memory_->pulls_with_push.load();
  s.shared_memory_in_place = shared_memory_->in_place.load();
  s.slot_calls = shared_memory_->slot_calls.load();
  s.streamed_pushes = shared_memory_->streamed_pushes.load();
  return s;
}

InputIndices ClientImpl::ServeFromCache(Op* op) {
  const size_t n_inputs = op->inputs.size();
  op->generations.assign(n_inputs, 0);
  op->hits.assign(n_inputs, 0);
  op->misses.assign(n_inputs, 0);
  std::vector<int64_t> oldest(n_inputs, kNoClock);
  InputIndices misses;
  std::vector<Key> keys;
  std::vector<float*> outs;
  std::vector<uint32_t> floats;
  std::vector<bool> hit;
  for (size_t i = 0; i < n_inputs; ++i) {
    const TableInput& in = op->inputs[i];
    op->generations[i] = cache_.Generation(in.spec->id());
    std::vector<uint32_t> missing;
    if (!cache_.enabled() || !Cacheable(*in.spec)) {
      // Nothing to look up: every index goes to the servers.
      missing.resize(in.n);
      std::iota(missing.begin(), missing.end(), 0u);
    } else {
      keys.clear();
      outs.clear();
      floats.clear();
      keys.reserve(in.n);
      outs.reserve(in.n);
      floats.reserve(in.n);
      for (uint32_t j = 0; j < in.n; ++j) {
        keys.push_back(KeyOf(in, j));
        outs.push_back(in.out + OffsetOf(in, j));
        floats.push_back(FloatsOf(in, j));
      }
      op->hits[i] = cache_.Lookup(in.spec->id(), keys, Freshness::For(*in.spec, op->clock), outs,
                                  floats, &hit, &oldest[i]);
      for (uint32_t j = 0; j < in.n; ++j) {
        if (!hit[j]) missing.push_back(j);
      }
    }
    op->misses[i] = missing.size();
    if (!missing.empty()) misses.emplace_back(i, std::move(missing));
  }
  absl::MutexLock lock(&op->mu);
  op->oldest_min_clock = std::move(oldest);
  return misses;
}

void ClientImpl::InvalidatePushed(const Op& op) {
  if (!cache_.enabled()) return;
  std::vector<Key> keys;
  for (const TableInput& in : op.inputs) {
    if (in.keys != nullptr) {  // sparse: the caller's keys as they are
      cache_.Invalidate(in.spec->id(), absl::MakeConstSpan(in.keys, in.n));
      continue;
    }
    keys.clear();
    for (uint32_t j = 0; j < in.n; ++j) keys.push_back(KeyOf(in, j));
    cache_.Invalidate(in.spec->id(), keys);
  }
  if (metrics_ != nullptr) metrics_->CacheBytes(cache_.bytes());
}

void ClientImpl::RecordReads(Op* op) {
  std::vector<int64_t> oldest;
  {
    absl::MutexLock lock(&op->mu);
    oldest = op->oldest_min_clock;
  }
  const double seconds = absl::ToDoubleSeconds(MonotonicNow() - op->start);
  pulls_.fetch_add(1);
  pull_micros_.fetch_add(static_cast<int64_t>(seconds * 1e6));
  for (size_t i = 0; i < op->inputs.size(); ++i) {
    if (op->inputs[i].n == 0) continue;
    const int64_t staleness = std::max<int64_t>(0, op->clock - oldest[i]);
    reads_.fetch_add(1);
    cache_hits_.fetch_add(op->hits[i]);
    cache_misses_.fetch_add(op->misses[i]);
    staleness_sum_.fetch_add(staleness);
    int64_t seen = staleness_max_.load();
    while (staleness > seen && !staleness_max_.compare_exchange_weak(seen, staleness)) {
    }
    if (metrics_ != nullptr) {
      metrics_->Read(op->inputs[i].spec->id(), op->hits[i], op->misses[i], staleness);
    }
  }
  if (metrics_ != nullptr) {
    metrics_->PullSeconds(seconds);
    metrics_->CacheBytes(cache_.bytes());
  }
}

}  // namespace cairn
