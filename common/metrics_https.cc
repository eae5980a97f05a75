#include "common/metrics_https.h"

#include <httplib.h>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "common/security/metrics_tls.h"
#include "prometheus/collectable.h"
#include "prometheus/text_serializer.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> HttpsMetricsEndpoint::Start(
    const std::string& host, int port,
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables) {
  std::unique_ptr<HttpsMetricsEndpoint> endpoint(new HttpsMetricsEndpoint());
  endpoint->collectables_ = std::move(collectables);
  endpoint->server_ = std::make_unique<httplib::SSLServer>(
      [](SSL_CTX& ctx) { return SetUpMetricsTlsContext(&ctx); });
  if (!endpoint->server_->is_valid()) {
    return absl::InvalidArgumentError("metrics.tls: cannot set up the TLS context of /metrics");
  }
  httplib::SSLServer& server = *endpoint->server_;
  server.new_task_queue = [] { return new httplib::ThreadPool(1); };
  // httplib's default also sets SO_REUSEPORT, with which a second process
  // binds a port another already serves and takes half its scrapes: a port
  // taken must fail the start (exit 3), as the plain endpoint's does.
  server.set_socket_options([](int fd) {
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  HttpsMetricsEndpoint* self = endpoint.get();
  server.Get("/metrics", [self](const httplib::Request&, httplib::Response& response) {
    std::vector<prometheus::MetricFamily> families;
    for (const std::shared_ptr<prometheus::Collectable>& c : self->collectables_) {
      std::vector<prometheus::MetricFamily> more = c->Collect();
      families.insert(families.end(), std::make_move_iterator(more.begin()),
                      std::make_move_iterator(more.end()));
    }
    response.set_content(prometheus::TextSerializer().Serialize(families),
                         "text/plain; version=0.0.4");
  });
  // httplib takes a bare IPv6 literal, without brackets.
  std::string bind_host = host;
  if (bind_host.size() > 2 && bind_host.front() == '[' && bind_host.back() == ']') {
    bind_host = bind_host.substr(1, bind_host.size() - 2);
  }
  if (port == 0) {
    endpoint->port_ = server.bind_to_any_port(bind_host);
  } else if (server.bind_to_port(bind_host, port)) {
    endpoint->port_ = port;
  } else {
    endpoint->port_ = -1;
  }
  if (endpoint->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics over TLS on ", host, ":", port,
                     ": cannot bind (is the port taken?)"));
  }
  endpoint->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that a
  // destruction right after Start cannot leave the thread listening.
  while (!server.is_running()) std::this_thread::yield();
  return endpoint;
}

HttpsMetricsEndpoint::~HttpsMetricsEndpoint() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace cairn
