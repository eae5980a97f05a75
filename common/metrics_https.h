// /metrics over HTTPS (metrics.tls; docs/security.md, "/metrics"): the
// Prometheus text exposition of a set of collectables, served by
// cpp-httplib's TLS server with this process's certificate
// (common/security/metrics_tls.h). prometheus-cpp's Exposer serves the
// plaintext endpoint; it is not used for TLS because Debian 12's civetweb,
// built for OpenSSL 1.1, calls a function OpenSSL 3 no longer exports on
// every TLS connection.
#ifndef CAIRN_COMMON_METRICS_HTTPS_H_
#define CAIRN_COMMON_METRICS_HTTPS_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace httplib {
class SSLServer;
}  // namespace httplib
namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace cairn {

// Thread-safe: one serving thread answers GET /metrics (and 404 for any
// other path) until destruction.
class HttpsMetricsEndpoint {
 public:
  // Serves `collectables` (kept alive by this object) on host:port (0: a
  // free port), with the certificate and key set by SetMetricsTlsFiles.
  // Unavailable naming the address when it cannot bind; InvalidArgument when
  // the TLS context cannot be set up.
  static absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> Start(
      const std::string& host, int port,
      std::vector<std::shared_ptr<prometheus::Collectable>> collectables);
  ~HttpsMetricsEndpoint();

  // The port bound.
  int port() const { return port_; }

 private:
  HttpsMetricsEndpoint() = default;
  std::unique_ptr<httplib::SSLServer> server_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_METRICS_HTTPS_H_
