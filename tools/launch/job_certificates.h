// cairn-launch --tls: a CA, a certificate per role and an admin token for
// one local job, made by cairn-certs (tools/cairn-certs, copied beside the
// binaries) in the work directory, and the flags that hand them to every
// process (docs/security.md).
#ifndef CAIRN_TOOLS_LAUNCH_JOB_CERTIFICATES_H_
#define CAIRN_TOOLS_LAUNCH_JOB_CERTIFICATES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn::launch {

// Runs `bin_dir`/cairn-certs into `workdir`/certs and returns the flags
// every daemon gets: --tls, --tls-ca, --tls-cert/--tls-key with "{role}",
// --tls-tokens. NotFound naming the script when it is missing; Internal with
// its output when it fails. Blocks until the script ends (under a second).
absl::StatusOr<std::vector<std::string>> MakeJobCertificates(const std::string& bin_dir,
                                                             const std::string& workdir);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_JOB_CERTIFICATES_H_
