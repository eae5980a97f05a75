// The roles a caller of a Cairn RPC can have under mutual TLS
// (docs/security.md). A certificate carries its role as the subject's
// organizational unit ("OU=worker"); a bearer token's role is recorded
// where the token is accepted (common/security/token_store.h).
#ifndef CAIRN_COMMON_SECURITY_ROLES_H_
#define CAIRN_COMMON_SECURITY_ROLES_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

namespace cairn {

enum class Role {
  kWorker,       // pulls, pushes, clocks; registers as a worker
  kServer,       // registers as a server; forwards pushes to backups, transfers replicas
  kCoordinator,  // drives checkpoints on the servers
  kAdmin,        // cairnctl: checkpoints, membership; reads everything
  kClient,       // cairnctl without privileges: reads status only
};

// "worker", "server", "coordinator", "admin", "client".
absl::string_view RoleName(Role role);

// The role named `name` (as RoleName spells it), or nullopt.
std::optional<Role> ParseRole(absl::string_view name);

// The role in a certificate subject as gRPC gives it ("CN=x,OU=worker,O=y",
// RFC 2253 order): the first OU that names a role, or nullopt when none does.
std::optional<Role> RoleFromSubject(absl::string_view subject);

// "worker|server|coordinator|admin|client", for error messages.
std::string AllRoleNames();

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_ROLES_H_
