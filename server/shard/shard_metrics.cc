#include "server/shard/shard_metrics.h"

#include <limits>

#include "common/metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace cairn {
namespace {
const char* const kMethodNames[] = {"Pull", "Push", "Clock", "Stats"};
}  // namespace

ShardMetrics::ShardMetrics(prometheus::Registry& registry) {
  requests_ = &prometheus::BuildCounter()
                   .Name("cairn_shard_requests_total")
                   .Help("RPCs served by the shard server, by method and gRPC code.")
                   .Register(registry);
  duplicate_pushes_ = &prometheus::BuildCounter()
                           .Name("cairn_shard_duplicate_pushes_total")
                           .Help("Pushes received again after they were applied (a client's "
                                 "retry): acknowledged, not applied twice.")
                           .Register(registry)
                           .Add({});
  busy_ = &prometheus::BuildGauge()
               .Name("cairn_shard_busy")
               .Help("1 while the server copies (snapshot) or loads (load) its partitions, "
                     "holding requests; its lease is renewed meanwhile.")
               .Register(registry);
  busy_->Add({{"operation", "snapshot"}}).Set(0);
  busy_->Add({{"operation", "load"}}).Set(0);
  rejoins_ = &prometheus::BuildCounter()
                  .Name("cairn_shard_rejoins_total")
                  .Help("Times the coordinator declared this server dead (a lease that ran out: "
                        "a cut or a stall) and it dropped what it held and registered again.")
                  .Register(registry)
                  .Add({});
  nonfinite_ = &prometheus::BuildCounter()
                    .Name("cairn_shard_nonfinite_rejected_total")
                    .Help("Pushes rejected for NaN or Inf gradients, by table.")
                    .Register(registry);
  keys_ = &prometheus::BuildGauge()
               .Name("cairn_shard_keys")
               .Help("Keys (dense chunks or embedding rows) held, by table.")
               .Register(registry);
  table_bytes_ = &prometheus::BuildGauge()
                      .Name("cairn_shard_table_bytes")
                      .Help("Value bytes held, by table (refreshed every 2 s).")
                      .Register(registry);
  pending_ids_ = &prometheus::BuildGauge()
                      .Name("cairn_shard_pending_ids")
                      .Help("Ids seen but not admitted yet (min_count), by table.")
                      .Register(registry);
  evicted_rows_ = &prometheus::BuildCounter()
                       .Name("cairn_shard_evicted_rows_total")
                       .Help("Embedding rows dropped by eviction (capacity_rows), by table.")
                       .Register(registry);
  expired_rows_ = &prometheus::BuildCounter()
                       .Name("cairn_shard_expired_rows_total")
                       .Help("Embedding rows deleted past their time-to-live (ttl_clocks), by "
                             "table.")
                       .Register(registry);
  admitted_rows_ = &prometheus::BuildCounter()
                        .Name("cairn_shard_admitted_rows_total")
                        .Help("Embedding rows created for new ids (at the first push, or the "
                              "min_count-th), by table.")
                        .Register(registry);
  spilled_rows_ = &prometheus::BuildCounter()
                       .Name("cairn_shard_spilled_rows_total")
                       .Help("Evicted embedding rows written to the cold tier (cold_tier), by "
                             "table.")
                       .Register(registry);
  cold_rows_ = &prometheus::BuildGauge()
                   .Name("cairn_shard_cold_rows")
                   .Help("Evicted embedding rows kept in the cold tier on RocksDB (cold_tier), "
                         "by table (refreshed every 2 s).")
                   .Register(registry);
  dropped_pending_ = &prometheus::BuildCounter()
                         .Name("cairn_shard_dropped_pending_ids_total")
                         .Help("Ids waiting for admission dropped because more than "
                               "capacity_rows waited, by table.")
                         .Register(registry);
  not_admitted_ = &prometheus::BuildCounter()
                       .Name("cairn_shard_not_admitted_pushes_total")
                       .Help("Pushes of ids not admitted yet, counted and dropped, by table.")
                       .Register(registry);
  staleness_bound_ = &prometheus::BuildGauge()
                          .Name("cairn_shard_staleness_bound")
                          .Help("The staleness bound s of each table, in clocks: 0 for BSP, the "
                                "configured bound for SSP, +Inf for ASP.")
                          .Register(registry);
  checkpoints_ = &prometheus::BuildCounter()
                      .Name("cairn_shard_checkpoints_total")
                      .Help("Checkpoints of this server's partitions, by result (ok, failed, "
                            "dropped).")
                      .Register(registry);
  checkpoint_seconds_ = &prometheus::BuildHistogram()
                             .Name("cairn_shard_checkpoint_duration_seconds")
                             .Help("Seconds to write one checkpoint to the store, synced.")
                             .Register(registry)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  checkpoint_bytes_ = &prometheus::BuildGauge()
                           .Name("cairn_shard_checkpoint_bytes")
                           .Help("Encoded bytes of this server's last checkpoint.")
                           .Register(registry)
                           .Add({});
  auto& in = prometheus::BuildCounter()
                 .Name("cairn_shard_received_bytes_total")
                 .Help("Request bytes received (keys and values), by method.")
                 .Register(registry);
  auto& out = prometheus::BuildCounter()
                  .Name("cairn_shard_sent_bytes_total")
                  .Help("Response bytes sent (values), by method.")
                  .Register(registry);
  auto& latency = prometheus::BuildHistogram()
                      .Name("cairn_shard_request_duration_seconds")
                      .Help("Seconds from a request's arrival to its reply, by method.")
                      .Register(registry);
  for (int m = 0; m < kNumMethods; ++m) {
    bytes_in_[m] = &in.Add({{"method", kMethodNames[m]}});
    bytes_out_[m] = &out.Add({{"method", kMethodNames[m]}});
    latency_[m] = &latency.Add({{"method", kMethodNames[m]}}, LatencyBuckets());
  }
  pull_wait_ = &prometheus::BuildHistogram()
                    .Name("cairn_shard_pull_wait_seconds")
                    .Help("Seconds a pull waited for the consistency bound.")
                    .Register(registry)
                    .Add({}, LatencyBuckets());
  push_bytes_ = &prometheus::BuildCounter()
                     .Name("cairn_shard_push_applied_bytes_total")
                     .Help("Bytes of pushed keys and gradients accepted.")
                     .Register(registry)
                     .Add({});
  min_clock_ = &prometheus::BuildGauge()
                    .Name("cairn_shard_min_clock")
                    .Help("Minimum clock over live workers.")
                    .Register(registry)
                    .Add({});
  clock_spread_ = &prometheus::BuildGauge()
                       .Name("cairn_shard_clock_spread")
                       .Help("Max minus min clock over live workers, in clocks.")
                       .Register(registry)
                       .Add({});
}

void ShardMetrics::Request(Method method, const std::string& code, uint64_t bytes_in,
                           uint64_t bytes_out, double seconds) {
  requests_->Add({{"method", kMethodNames[method]}, {"code", code}}).Increment();
  bytes_in_[method]->Increment(static_cast<double>(bytes_in));
  bytes_out_[method]->Increment(static_cast<double>(bytes_out));
  latency_[method]->Observe(seconds);
}

void ShardMetrics::PullWait(double seconds) { pull_wait_->Observe(seconds); }

void ShardMetrics::PushBytes(uint64_t bytes) { push_bytes_->Increment(static_cast<double>(bytes)); }

void ShardMetrics::NonFinite(const std::string& table) {
  nonfinite_->Add({{"table", table}}).Increment();
}

void ShardMetrics::Clocks(int64_t min_clock, int64_t max_clock) {
  min_clock_->Set(static_cast<double>(min_clock));
  clock_spread_->Set(static_cast<double>(max_clock > min_clock ? max_clock - min_clock : 0));
}

void ShardMetrics::Tables(const v1::StatsResponse& stats) {
  absl::MutexLock lock(&totals_mu_);
  for (const v1::TableStats& t : stats.tables()) {
    const prometheus::Labels labels = {{"table", t.table()}};
    keys_->Add(labels).Set(static_cast<double>(t.num_keys()));
    table_bytes_->Add(labels).Set(static_cast<double>(t.bytes()));
    pending_ids_->Add(labels).Set(static_cast<double>(t.pending_ids()));
    cold_rows_->Add(labels).Set(static_cast<double>(t.cold_rows()));
    Totals& last = totals_[t.table()];
    auto count = [&](prometheus::Family<prometheus::Counter>* family, uint64_t now,
                     uint64_t* seen) {
      const uint64_t delta = now >= *seen ? now - *seen : now;
      if (delta > 0) family->Add(labels).Increment(static_cast<double>(delta));
      *seen = now;
    };
    count(evicted_rows_, t.evicted_rows(), &last.evicted);
    count(expired_rows_, t.expired_rows(), &last.expired);
    count(admitted_rows_, t.admitted_rows(), &last.admitted);
    count(spilled_rows_, t.spilled_rows(), &last.spilled);
    count(dropped_pending_, t.dropped_pending_ids(), &last.dropped_pending);
    count(not_admitted_, t.not_admitted_pushes(), &last.not_admitted);
  }
}

void ShardMetrics::StalenessBound(const std::string& table, int64_t bound) {
  staleness_bound_->Add({{"table", table}})
      .Set(bound < 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(bound));
}

void ShardMetrics::Checkpoint(const std::string& result, double seconds, uint64_t bytes) {
  checkpoints_->Add({{"result", result}}).Increment();
  if (result == "ok") {
    checkpoint_seconds_->Observe(seconds);
    checkpoint_bytes_->Set(static_cast<double>(bytes));
  }
}

void ShardMetrics::Rejoined() { rejoins_->Increment(); }

void ShardMetrics::DuplicatePush() { duplicate_pushes_->Increment(); }

void ShardMetrics::Busy(const std::string& operation, bool busy) {
  busy_->Add({{"operation", operation}}).Set(busy ? 1 : 0);
}

}  // namespace cairn
