// Addresses: parsing and checking host:port strings, binding checks.
#ifndef CAIRN_COMMON_NET_H_
#define CAIRN_COMMON_NET_H_

#include <string>

#include "absl/status/statusor.h"

namespace cairn {

struct HostPort {
  std::string host;  // without brackets for IPv6 literals
  int port = 0;
};

// Parses "host:port", "1.2.3.4:5", "[::1]:5". InvalidArgument naming `what`
// (the config key or flag) on an empty host, a bad IPv4 literal such as
// 10.0.0.300, a port outside 1..65535 (0 allowed when allow_zero_port).
absl::StatusOr<HostPort> ParseHostPort(const std::string& text, const std::string& what,
                                       bool allow_zero_port = false);

// "host:port", bracketing IPv6 literals.
std::string FormatHostPort(const std::string& host, int port);

// True when `host` is a loopback or unspecified address (127.x, ::1,
// localhost, 0.0.0.0, ::).
bool IsLoopbackOrUnspecified(const std::string& host);

}  // namespace cairn

#endif  // CAIRN_COMMON_NET_H_
