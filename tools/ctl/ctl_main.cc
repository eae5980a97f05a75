// cairnctl: the operator's command line for a running Cairn job.
//
//   cairnctl --coordinator HOST:PORT status [--json]
//
// Exit codes: 0 done; 1 failed (the coordinator answered with an error);
// 2 bad flags; 3 status printed, but a live server did not answer its Stats
// call; 4 the coordinator is unreachable (nothing printed on stdout).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "common/config/units.h"
#include "common/net.h"
#include "tools/ctl/cluster_status.h"
#include "tools/ctl/status_format.h"

namespace cairn::ctl {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPartial = 3;
constexpr int kExitUnreachable = 4;

struct GlobalFlags {
  std::string coordinator = "127.0.0.1:7070";
  std::string timeout = "5s";
};

struct StatusFlags {
  bool json = false;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "cairnctl: %s\n", message.c_str());
  return code;
}

int RunStatus(const GlobalFlags& global, const StatusFlags& flags) {
  absl::StatusOr<HostPort> address = ParseHostPort(global.coordinator, "--coordinator");
  if (!address.ok()) return Fail(kExitUsage, std::string(address.status().message()));
  absl::StatusOr<absl::Duration> timeout = ParseDuration(global.timeout);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return Fail(kExitUsage, "--timeout " + global.timeout +
                                ": expected a positive duration such as 5s or 500ms");
  }
  absl::StatusOr<ClusterStatus> status = FetchClusterStatus(global.coordinator, *timeout);
  if (!status.ok()) {
    const bool unreachable = status.status().code() == absl::StatusCode::kUnavailable;
    return Fail(unreachable ? kExitUnreachable : kExitFailed,
                std::string(status.status().message()));
  }
  if (flags.json) {
    std::cout << StatusToJson(*status).dump(2) << "\n";
  } else {
    std::cout << StatusToText(*status);
  }
  std::cout.flush();
  for (const ServerStats& s : status->servers) {
    if (!s.status.ok()) return kExitPartial;
  }
  return 0;
}

}  // namespace
}  // namespace cairn::ctl

int main(int argc, char** argv) {
  using namespace cairn::ctl;
  GlobalFlags global;
  StatusFlags status_flags;
  CLI::App app{"cairnctl: inspect a running Cairn job"};
  app.footer(
      "Exit codes: 0 done, 1 failed, 2 bad flags, 3 a live server did not answer, "
      "4 coordinator unreachable.");
  app.require_subcommand(1);
  app.add_option("--coordinator", global.coordinator, "the coordinator's host:port")
      ->envname("CAIRN_COORDINATOR")
      ->capture_default_str();
  app.add_option("--timeout", global.timeout, "deadline of each call (e.g. 5s, 500ms)")
      ->capture_default_str();

  CLI::App* status = app.add_subcommand(
      "status",
      "members (role, state, lease age), the partition map, and each table's min and max "
      "clock over the servers");
  status->add_flag("--json", status_flags.json, "print one JSON object (for scripts)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (status->parsed()) return RunStatus(global, status_flags);
  return kExitUsage;
}
