#include "tools/launch/port_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cairn::launch {

absl::StatusOr<std::optional<DaemonPorts>> ReadPortFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::optional<DaemonPorts>();
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read port file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  DaemonPorts ports;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    int port = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("port file ", path, ":", line_number,
                                                     ": expected name=port, got \"", line, "\""));
    }
    if (kv.first == "grpc") ports.grpc = port;
    if (kv.first == "metrics") ports.metrics = port;
  }
  if (ports.grpc == 0 || ports.metrics == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("port file ", path, " lacks a grpc= or metrics= line"));
  }
  return std::optional<DaemonPorts>(ports);
}

std::string MetricsUrl(const std::string& host, int metrics_port, bool https) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return absl::StrCat(https ? "https://" : "http://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", metrics_port,
                      "/metrics");
}

}  // namespace cairn::launch
