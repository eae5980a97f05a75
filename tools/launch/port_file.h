// Reading the port file a Cairn daemon writes once it serves (see
// common/daemon.h): "grpc=<port>\nmetrics=<port>\n". Daemons write it to a
// temporary file and rename it into place, so an existing file is complete.
#ifndef CAIRN_TOOLS_LAUNCH_PORT_FILE_H_
#define CAIRN_TOOLS_LAUNCH_PORT_FILE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace cairn::launch {

// The ports a daemon bound.
struct DaemonPorts {
  int grpc = 0;
  int metrics = 0;
};

// Reads `path` once, without waiting. nullopt when the file does not exist
// (yet). InvalidArgument naming the path and the line for a line that is not
// "name=port" with a port in 1..65535, or a file without both grpc= and
// metrics=. Unknown names are ignored, so daemons may add ports.
absl::StatusOr<std::optional<DaemonPorts>> ReadPortFile(const std::string& path);

// "http://<host>:<metrics>/metrics" ("https://" with `https`: metrics.tls);
// a bare IPv6 `host` gets brackets.
std::string MetricsUrl(const std::string& host, int metrics_port, bool https = false);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_PORT_FILE_H_
