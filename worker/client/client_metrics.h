// The client library's Prometheus metrics, registered in the registry the
// caller passes in ClientOptions (cairn-worker passes its own, so they appear
// on the worker's /metrics; docs/metrics.md lists them):
//
//   cairn_client_cache_hits_total{table}         counter: keys (dense chunks or
//       embedding rows) a pull took from the worker-side cache
//   cairn_client_cache_misses_total{table}       counter: keys a pull fetched
//       from a server
//   cairn_client_cache_bytes                     gauge: bytes the cache holds
//   cairn_client_cache_evictions_total           counter: entries evicted to
//       stay within the capacity
//   cairn_client_read_staleness_clocks{table}    histogram: at each read of a
//       table, the reader's clock minus the oldest server min clock its
//       values reflect (0: the values hold every update of every earlier
//       iteration; SSP keeps it <= the bound s)
//   cairn_client_pull_duration_seconds           histogram: from a pull's
//       start to its completion (consistency waits included)
//
// Thread-safe (prometheus-cpp metrics are). The registry must outlive this.
#ifndef CAIRN_WORKER_CLIENT_CLIENT_METRICS_H_
#define CAIRN_WORKER_CLIENT_CLIENT_METRICS_H_

#include <cstdint>
#include <vector>

#include "cairn/v1/types.pb.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace cairn {

class ClientMetrics {
 public:
  // Creates the series of every table of `job` up front (labels: table names).
  ClientMetrics(prometheus::Registry& registry, const v1::JobSpec& job);

  // One read of table `table_id` (index in job.tables): keys served from the
  // cache and from servers, and the staleness it observed in clocks.
  void Read(uint32_t table_id, uint64_t hits, uint64_t misses, int64_t staleness_clocks);
  void PullSeconds(double seconds);
  void CacheBytes(uint64_t bytes);
  void Evicted(uint64_t entries);

 private:
  // Indexed by table id; constant after construction.
  std::vector<prometheus::Counter*> hits_;
  std::vector<prometheus::Counter*> misses_;
  std::vector<prometheus::Histogram*> staleness_;
  prometheus::Histogram* pull_seconds_;
  prometheus::Gauge* cache_bytes_;
  prometheus::Counter* evictions_;
};

// Bucket bounds of cairn_client_read_staleness_clocks, in clocks.
std::vector<double> StalenessBuckets();

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CLIENT_METRICS_H_
