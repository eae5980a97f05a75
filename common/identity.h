// Where a member's identity and addresses come from when a scheduler starts
// it (docs/deploy.md, "Identity and addresses"): flags first, then the
// environment, then the job's YAML. One pod or task template per role is
// enough: the index comes from what Kubernetes or Slurm sets.
//
//   coordinator   --coordinator > CAIRN_COORDINATOR > cluster.coordinator
//   index         --server-id/--worker-id > CAIRN_INDEX > JOB_COMPLETION_INDEX
//                 (Kubernetes Indexed Job) > the StatefulSet ordinal of the
//                 hostname ("name-3"; only inside Kubernetes, where
//                 KUBERNETES_SERVICE_HOST is set) > SLURM_PROCID minus
//                 CAIRN_INDEX_OFFSET (default 0; for one srun whose ranks span
//                 several roles, e.g. --multi-prog)
//   advertise     --advertise > CAIRN_ADVERTISE_HOST > the listen host
//
// Thread-compatible; the functions read the environment through `env`.
#ifndef CAIRN_COMMON_IDENTITY_H_
#define CAIRN_COMMON_IDENTITY_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn {

// Looks a variable up: nullopt when unset. ProcessEnv() reads getenv.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup ProcessEnv();

// A value and where it came from ("--worker-id", "CAIRN_INDEX", ...), for
// logs and errors.
struct Sourced {
  std::string value;
  std::string source;  // empty: nothing gave one
};

// The member index for `role` ("server" or "worker"): `flag_value` (>= 0
// when the flag `flag_name` was given), else the environment as above.
// Returns index -1 with an empty source when nothing gives one (the
// coordinator picks). `count` is cluster.servers or cluster.workers.
// Errors: InvalidArgument naming the variable or flag when a value is not a
// non-negative integer, when SLURM_PROCID minus CAIRN_INDEX_OFFSET is
// negative, or when the index is not below `count` ("worker index 5 (from
// JOB_COMPLETION_INDEX) is out of range: cluster.workers is 4").
struct ResolvedIndex {
  int index = -1;
  std::string source;
};
absl::StatusOr<ResolvedIndex> ResolveIndex(const std::string& role, int flag_value,
                                           const std::string& flag_name, int count,
                                           const EnvLookup& env);

// The coordinator's host:port: `flag_value` when non-empty, else
// CAIRN_COORDINATOR, else `yaml_value` (cluster.coordinator). Errors:
// InvalidArgument naming the source when the text is not host:port.
absl::StatusOr<Sourced> ResolveCoordinator(const std::string& flag_value,
                                           const std::string& yaml_value, const EnvLookup& env);

// The host this member tells others to dial: `flag_value` when non-empty,
// else CAIRN_ADVERTISE_HOST, else `listen_host`.
Sourced ResolveAdvertiseHost(const std::string& flag_value, const std::string& listen_host,
                             const EnvLookup& env);

// The address others should dial for a service bound to `bound` (host:port):
// `bound` itself, or, when it is bound to every interface (0.0.0.0, ::),
// `host` with its port. For /metrics addresses registered with the
// coordinator (cairnctl and dashboards dial them).
std::string DialableAddress(const std::string& bound, const std::string& host);

// The host a worker names itself by: CAIRN_ADVERTISE_HOST, else the
// machine's host name.
std::string OwnHost(const EnvLookup& env);

// Waits until the host of `host_port` resolves (getaddrinfo), retrying for
// up to `timeout`: a scheduler's DNS records may appear a moment after the
// process starts. Errors: Unavailable naming the host, `source` and the
// resolver's message once the time is up.
absl::Status WaitUntilResolvable(const std::string& host_port, const std::string& source,
                                 absl::Duration timeout);

}  // namespace cairn

#endif  // CAIRN_COMMON_IDENTITY_H_
