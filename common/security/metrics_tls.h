// HTTPS for /metrics (docs/security.md, "/metrics"): this process's
// certificate and key in the TLS context of the /metrics server
// (common/metrics_https.h), so Prometheus scrapes with the job's CA file
// (`tls_config.ca_file`). The server does not ask Prometheus for a
// certificate: /metrics carries no secret (security_test greps it).
//
// The files are read again at every TLS handshake, so a rotated certificate
// reaches the next scrape without a restart, like the gRPC channels'. A pair
// read mid-rotation (a new certificate with the old key) is not used: the
// handshake keeps the pair loaded before.
#ifndef CAIRN_COMMON_SECURITY_METRICS_TLS_H_
#define CAIRN_COMMON_SECURITY_METRICS_TLS_H_

#include <string>

#include "absl/status/status.h"

namespace cairn {

// Sets the certificate chain and key files (PEM) that SetUpMetricsTlsContext
// loads.
// Checks that they load and match now: InvalidArgument naming the file and
// OpenSSL's reason otherwise. Thread-safe; the last call wins.
absl::Status SetMetricsTlsFiles(const std::string& cert_file, const std::string& key_file);

// Loads the files of SetMetricsTlsFiles into `ssl_ctx` (an SSL_CTX*),
// requires TLS 1.2 or later, and installs the per-handshake reload. False
// (logged, naming the file) when the files do not load.
bool SetUpMetricsTlsContext(void* ssl_ctx);

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_METRICS_TLS_H_
