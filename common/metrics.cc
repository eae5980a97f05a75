#include "common/metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/metrics_https.h"
#include "common/security/metrics_tls.h"
#include "common/security/transport_security.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace cairn {
namespace {

// Reads /proc/self at scrape time.
class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    out.push_back(Gauge("process_cpu_seconds_total", "User and system CPU time spent in seconds.",
                        prometheus::MetricType::Counter, CpuSeconds()));
    out.push_back(Gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                        prometheus::MetricType::Gauge, ResidentBytes()));
    out.push_back(Gauge("process_open_fds", "Number of open file descriptors.",
                        prometheus::MetricType::Gauge, OpenFds()));
    return out;
  }

 private:
  static prometheus::MetricFamily Gauge(const std::string& name, const std::string& help,
                                        prometheus::MetricType type, double value) {
    prometheus::MetricFamily family;
    family.name = name;
    family.help = help;
    family.type = type;
    prometheus::ClientMetric metric;
    if (type == prometheus::MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family.metric.push_back(metric);
    return family;
  }
  static double CpuSeconds() {
    std::ifstream stat("/proc/self/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // Fields after the command name (which may hold spaces) start after ')'.
    const size_t paren = content.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream rest(content.substr(paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  static double ResidentBytes() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
  }
  static double OpenFds() {
    int n = 0;
    if (DIR* dir = opendir("/proc/self/fd")) {
      while (readdir(dir) != nullptr) ++n;
      closedir(dir);
    }
    return n > 2 ? n - 3 : 0;  // ".", "..", and the fd opendir holds
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host,
                                                                    int port,
                                                                    const std::string& component,
                                                                    bool tls) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->registry_ = std::make_shared<prometheus::Registry>();
  server->tls_ = tls;
  const std::string bind = absl::StrCat(host, ":", port);
  server->process_collector_ = std::make_shared<ProcessCollector>();
  if (tls) {
    const std::optional<TransportSecurityFiles> files = InstalledTransportSecurityFiles();
    if (!files.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          component, ": metrics.tls serves /metrics with this process's TLS certificate, "
          "but TLS is off: set security.tls (or --tls, CAIRN_TLS=1) and its files"));
    }
    // The copies gRPC reads: /metrics presents the same checked set, and
    // a set refused for gRPC (a key that does not match, a certificate of
    // another role or CA) is refused here too.
    const std::optional<std::pair<std::string, std::string>> checked =
        InstalledCheckedCertificateAndKey();
    if (absl::Status s = SetMetricsTlsFiles(checked->first, checked->second); !s.ok()) {
      return s;
    }
    // A scraper dialling metrics.host checks it against the certificate,
    // as peers check the gRPC address; only the scrapes would fail, so the
    // process goes on (any address: scrapers dial a name of their own).
    if (host != "0.0.0.0" && host != "::" && host != "[::]" && !host.empty()) {
      std::string bare = host;
      if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
        bare = bare.substr(1, bare.size() - 2);
      }
      if (absl::Status s = CheckCertificateNames(bare, "metrics.host"); !s.ok()) {
        LOG_WARN("{}: /metrics over HTTPS: {}", component, s.message());
      }
    }
    absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> https = HttpsMetricsEndpoint::Start(
        host, port, {server->registry_, server->process_collector_});
    if (!https.ok()) {
      return absl::Status(https.status().code(),
                          absl::StrCat(component, ": ", https.status().message()));
    }
    server->https_ = *std::move(https);
    server->address_ = absl::StrCat(host, ":", server->https_->port());
    return server;
  }
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(bind, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat(component, ": cannot serve /metrics on ", bind, ": ", e.what()));
  }
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->address_ = absl::StrCat(host, ":", ports.empty() ? port : ports.front());
  server->exposer_->RegisterCollectable(server->registry_);
  server->exposer_->RegisterCollectable(server->process_collector_);
  return server;
}

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::url() const {
  return absl::StrCat(tls_ ? "https://" : "http://", address_, "/metrics");
}

std::vector<double> LatencyBuckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
          50e-3, 100e-3, 250e-3, 500e-3, 1.0, 2.5, 5.0, 10.0};
}

std::vector<double> SizeBuckets() {
  std::vector<double> b;
  for (double v = 1024; v <= 256.0 * 1024 * 1024; v *= 4) b.push_back(v);
  return b;
}

}  // namespace cairn
