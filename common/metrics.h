// The metrics registry every daemon serves at /metrics (Prometheus text
// format, prometheus-cpp), plus process metrics (CPU seconds, resident memory,
// open file descriptors) read from /proc at scrape time.
//
// Names follow cairn_<component>_<what>_<unit> in base units; labels are of
// bounded cardinality (table, method, role), never a key, clock or worker id.
// docs/metrics.md lists every metric.
#ifndef CAIRN_COMMON_METRICS_H_
#define CAIRN_COMMON_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace prometheus {
class Collectable;
class Registry;
class Exposer;
class Histogram;
}  // namespace prometheus

namespace cairn {

class HttpsMetricsEndpoint;

// Thread-safe (prometheus-cpp's registry and metrics are).
class MetricsServer {
 public:
  // Listens on host:port (port 0 picks a free one). With `tls`, serves
  // HTTPS with this process's TLS certificate and key (metrics.tls,
  // common/security/metrics_tls.h): FailedPrecondition when transport
  // security is not installed, InvalidArgument when its files do not load.
  // Unavailable naming the address when it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& host,
                                                              int port,
                                                              const std::string& component,
                                                              bool tls = false);
  ~MetricsServer();

  prometheus::Registry& registry() { return *registry_; }
  const std::shared_ptr<prometheus::Registry>& shared_registry() { return registry_; }
  // host:port actually bound.
  const std::string& address() const { return address_; }
  // "https://host:port/metrics" with TLS, else "http://host:port/metrics".
  std::string url() const;

 private:
  MetricsServer() = default;
  std::shared_ptr<prometheus::Registry> registry_;
  // Owned here: the exposer keeps only weak pointers to what it serves.
  std::shared_ptr<prometheus::Collectable> process_collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;     // plaintext
  std::unique_ptr<HttpsMetricsEndpoint> https_;      // metrics.tls
  std::string address_;
  bool tls_ = false;
};

// Latency buckets in seconds that fit loopback (tens of µs) to cross-cluster
// (seconds) RPCs: 50 µs .. 10 s.
std::vector<double> LatencyBuckets();
// Size buckets in bytes: 1 KiB .. 256 MiB, powers of 4.
std::vector<double> SizeBuckets();

}  // namespace cairn

#endif  // CAIRN_COMMON_METRICS_H_
