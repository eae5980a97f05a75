// The metrics of cairn-server, declared together (docs/metrics.md lists them).
#ifndef CAIRN_SERVER_SHARD_SHARD_METRICS_H_
#define CAIRN_SERVER_SHARD_SHARD_METRICS_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.pb.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace cairn {

// Thread-safe.
class ShardMetrics {
 public:
  enum Method { kPull = 0, kPush, kClock, kStats, kNumMethods };

  explicit ShardMetrics(prometheus::Registry& registry);

  // One finished RPC: its method, gRPC code name ("OK", ...), bytes received
  // and sent, and seconds from arrival to reply (pull: waiting included).
  void Request(Method method, const std::string& code, uint64_t bytes_in, uint64_t bytes_out,
               double seconds);
  // Seconds a pull waited for the consistency bound.
  void PullWait(double seconds);
  void PushBytes(uint64_t bytes);
  // A push whose (worker, incarnation, group, sequence) was applied before:
  // a retry (its first answer was lost or late); nothing applied again.
  void DuplicatePush();
  void NonFinite(const std::string& table);
  void Clocks(int64_t min_clock, int64_t max_clock);
  // Every table of a Stats answer: keys, value bytes, ids waiting for
  // admission, and the admitted, evicted, expired and spilled rows and
  // not-admitted pushes counted since
  // the last call (the answer holds totals of this incarnation; a smaller
  // total than last time is a new incarnation's, counted whole).
  // Thread-safe.
  void Tables(const v1::StatsResponse& stats) ABSL_LOCKS_EXCLUDED(totals_mu_);
  // The table's staleness bound s in clocks (BSP 0); `bound` < 0 (ASP, no
  // bound) is exported as +Inf.
  void StalenessBound(const std::string& table, int64_t bound);
  // A checkpoint of this server's partitions: `result` "ok" (written in
  // `seconds`, `bytes` encoded), "failed" (store or report error) or
  // "dropped" (the previous ones were still being written).
  void Checkpoint(const std::string& result, double seconds, uint64_t bytes);
  // The coordinator declared this server dead and it registered again,
  // empty (server/shard/incarnation.h).
  void Rejoined();
  // The server is (`busy`) or no longer is inside a long operation that
  // holds its shard: "snapshot" (copying partitions for a checkpoint) or
  // "load" (filling partitions from a checkpoint or a file). It keeps
  // renewing its lease meanwhile; requests wait.
  void Busy(const std::string& operation, bool busy);

 private:
  prometheus::Family<prometheus::Gauge>* busy_;
  prometheus::Family<prometheus::Counter>* checkpoints_;
  prometheus::Histogram* checkpoint_seconds_;
  prometheus::Gauge* checkpoint_bytes_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Counter>* nonfinite_;
  prometheus::Family<prometheus::Gauge>* keys_;
  prometheus::Family<prometheus::Gauge>* staleness_bound_;
  prometheus::Counter* bytes_in_[kNumMethods];
  prometheus::Counter* bytes_out_[kNumMethods];
  prometheus::Histogram* latency_[kNumMethods];
  prometheus::Histogram* pull_wait_;
  prometheus::Counter* push_bytes_;
  prometheus::Counter* duplicate_pushes_;
  prometheus::Gauge* min_clock_;
  prometheus::Gauge* clock_spread_;
  prometheus::Counter* rejoins_;
  prometheus::Family<prometheus::Gauge>* table_bytes_;
  prometheus::Family<prometheus::Gauge>* pending_ids_;
  prometheus::Family<prometheus::Gauge>* cold_rows_;
  prometheus::Family<prometheus::Counter>* evicted_rows_;
  prometheus::Family<prometheus::Counter>* expired_rows_;
  prometheus::Family<prometheus::Counter>* admitted_rows_;
  prometheus::Family<prometheus::Counter>* spilled_rows_;
  prometheus::Family<prometheus::Counter>* dropped_pending_;
  prometheus::Family<prometheus::Counter>* not_admitted_;
  struct Totals {
    uint64_t evicted = 0;
    uint64_t expired = 0;
    uint64_t admitted = 0;
    uint64_t spilled = 0;
    uint64_t dropped_pending = 0;
    uint64_t not_admitted = 0;
  };
  absl::Mutex totals_mu_;
  absl::flat_hash_map<std::string, Totals> totals_ ABSL_GUARDED_BY(totals_mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_SHARD_METRICS_H_
