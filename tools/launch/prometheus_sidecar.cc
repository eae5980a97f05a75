#include "tools/launch/prometheus_sidecar.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace cairn::launch {
namespace {

size_t DiscardBody(char*, size_t size, size_t count, void*) { return size * count; }

const Member* FindPrometheus(const Supervisor& supervisor) {
  for (const Member& m : supervisor.members()) {
    if (m.role == Role::kPrometheus) return &m;
  }
  return nullptr;
}

}  // namespace

absl::Status CheckPrometheusInstalled(const std::string& binary) {
  struct stat info;
  if (::stat(binary.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      ::access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--prometheus: ", binary,
                     " is not installed (Debian package prometheus; tools/setup installs it)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::InternalError(
        absl::StrCat("cannot find a free port on 127.0.0.1: ", std::strerror(error)));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::vector<std::string> PrometheusArgs(const PrometheusFiles& files, int port) {
  return {"--config.file=" + files.config, "--storage.tsdb.path=" + files.data,
          absl::StrCat("--web.listen-address=127.0.0.1:", port), "--log.level=warn"};
}

bool PrometheusReady(int port, absl::Duration timeout) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) return false;
  const std::string url = absl::StrCat("http://127.0.0.1:", port, "/-/ready");
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, DiscardBody);
  if (curl_easy_perform(curl.get()) != CURLE_OK) return false;
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  return code == 200;
}

absl::StatusOr<PrometheusStart> StartPrometheus(Supervisor& supervisor, const std::string& binary,
                                                const PrometheusFiles& files,
                                                absl::Time deadline) {
  absl::StatusOr<int> port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  // Prometheus logs its SIGTERM as a warning; that is how the job stops it.
  auto quiet = [](absl::string_view line) {
    return line.find("msg=\"Received SIGTERM, exiting gracefully...\"") == absl::string_view::npos;
  };
  if (absl::Status s = supervisor.Start(Role::kPrometheus, 0, binary,
                                        PrometheusArgs(files, *port), quiet);
      !s.ok()) {
    return s;
  }
  PrometheusStart start;
  start.url = absl::StrCat("http://127.0.0.1:", *port, "/");
  const Member* member = FindPrometheus(supervisor);
  bool ended = false;
  start.event = supervisor.RunUntil(
      [&] {
        ended = member == nullptr || member->exit.has_value();
        return ended || PrometheusReady(*port);
      },
      deadline);
  if (start.event.kind == Event::Kind::kReady && ended) {
    start.event.kind = Event::Kind::kFailed;
    start.event.failed = "prometheus";
    if (member != nullptr) start.event.status = *member->exit;
  }
  return start;
}

}  // namespace cairn::launch
