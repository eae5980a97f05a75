#include "worker/client/client_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "common/metrics.h"

namespace cairn {

std::vector<double> StalenessBuckets() { return {0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50, 100}; }

ClientMetrics::ClientMetrics(prometheus::Registry& registry, const v1::JobSpec& job) {
  auto& hits = prometheus::BuildCounter()
                   .Name("cairn_client_cache_hits_total")
                   .Help("Keys (dense chunks or embedding rows) a pull took from the worker-side "
                         "cache, by table.")
                   .Register(registry);
  auto& misses = prometheus::BuildCounter()
                     .Name("cairn_client_cache_misses_total")
                     .Help("Keys a pull fetched from a server, by table.")
                     .Register(registry);
  auto& staleness = prometheus::BuildHistogram()
                        .Name("cairn_client_read_staleness_clocks")
                        .Help("At each read of a table: the reader's clock minus the oldest "
                              "server min clock its values reflect, in clocks.")
                        .Register(registry);
  for (const v1::TableSpec& t : job.tables()) {
    hits_.push_back(&hits.Add({{"table", t.name()}}));
    misses_.push_back(&misses.Add({{"table", t.name()}}));
    staleness_.push_back(&staleness.Add({{"table", t.name()}}, StalenessBuckets()));
  }
  pull_seconds_ = &prometheus::BuildHistogram()
                       .Name("cairn_client_pull_duration_seconds")
                       .Help("Seconds from a pull's start to its completion, consistency waits "
                             "included.")
                       .Register(registry)
                       .Add({}, LatencyBuckets());
  cache_bytes_ = &prometheus::BuildGauge()
                      .Name("cairn_client_cache_bytes")
                      .Help("Bytes the worker-side cache holds (values and entry overhead).")
                      .Register(registry)
                      .Add({});
  evictions_ = &prometheus::BuildCounter()
                    .Name("cairn_client_cache_evictions_total")
                    .Help("Cache entries evicted to stay within the configured capacity.")
                    .Register(registry)
                    .Add({});
}

void ClientMetrics::Read(uint32_t table_id, uint64_t hits, uint64_t misses,
                         int64_t staleness_clocks) {
  if (table_id >= hits_.size()) return;
  if (hits > 0) hits_[table_id]->Increment(static_cast<double>(hits));
  if (misses > 0) misses_[table_id]->Increment(static_cast<double>(misses));
  staleness_[table_id]->Observe(static_cast<double>(staleness_clocks));
}

void ClientMetrics::PullSeconds(double seconds) { pull_seconds_->Observe(seconds); }

void ClientMetrics::CacheBytes(uint64_t bytes) { cache_bytes_->Set(static_cast<double>(bytes)); }

void ClientMetrics::Evicted(uint64_t entries) {
  if (entries > 0) evictions_->Increment(static_cast<double>(entries));
}

}  // namespace cairn
