#include "common/net.h"

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cairn {
namespace {

bool LooksLikeIpv4(const std::string& host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<HostPort> ParseHostPort(const std::string& text, const std::string& what,
                                       bool allow_zero_port) {
  HostPort out;
  std::string port_text;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"", text, "\" is not [ipv6]:port"));
    }
    out.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    in6_addr addr6;
    if (inet_pton(AF_INET6, out.host.c_str(), &addr6) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"", out.host, "\" is not an IPv6 address"));
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"", text, "\" is not host:port"));
    }
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"", text, "\": put IPv6 addresses in brackets, [::1]:port"));
    }
    if (LooksLikeIpv4(out.host)) {
      in_addr addr4;
      if (inet_pton(AF_INET, out.host.c_str(), &addr4) != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": \"", out.host, "\" is not a valid IPv4 address"));
      }
    }
  }
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < (allow_zero_port ? 0 : 1) ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": port \"", port_text, "\" of \"", text,
                     "\" must be a number in ", allow_zero_port ? "0" : "1", "..65535"));
  }
  out.port = port;
  return out;
}

std::string FormatHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

bool IsLoopbackOrUnspecified(const std::string& host) {
  if (host == "localhost" || host == "0.0.0.0" || host == "::" || host == "::1") return true;
  return absl::StartsWith(host, "127.");
}

}  // namespace cairn
