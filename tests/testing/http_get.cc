#include "tests/testing/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cairn::testing {

absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                    absl::Duration timeout) {
  const std::string url = absl::StrCat("http://", host, ":", port, path);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("GET ", url, ": host is not an IPv4 literal"));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("GET ", url, ": ", std::strerror(errno)));
  const timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("GET ", url, ": ", std::strerror(error)));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, ":", port, "\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("GET ", url, ": send: ", std::strerror(error)));
    }
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buffer[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      if (error == EAGAIN || error == EWOULDBLOCK) {
        return absl::DeadlineExceededError(
            absl::StrCat("GET ", url, ": no answer within ", absl::FormatDuration(timeout)));
      }
      return absl::UnavailableError(absl::StrCat("GET ", url, ": recv: ", std::strerror(error)));
    }
    if (n == 0) break;  // HTTP/1.0: the server closes after the body
    response.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t line_end = response.find("\r\n");
  const std::string status_line = response.substr(0, line_end);
  if (!absl::StartsWith(status_line, "HTTP/") || status_line.find(" 200") == std::string::npos) {
    return absl::InternalError(absl::StrCat("GET ", url, ": ", status_line));
  }
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : response.substr(body + 4);
}

}  // namespace cairn::testing
