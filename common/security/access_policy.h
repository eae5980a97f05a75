// Which roles may call which RPC method (docs/security.md, "Roles"). One
// table for every service Cairn serves; a method not in it is refused.
#ifndef CAIRN_COMMON_SECURITY_ACCESS_POLICY_H_
#define CAIRN_COMMON_SECURITY_ACCESS_POLICY_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "common/security/roles.h"

namespace cairn {

// OK when `role` may call `method` (the gRPC path, "/cairn.v1.Coordinator/
// Checkpoint"). Otherwise PermissionDenied naming the method, the roles that
// may call it and `role`. Thread-safe (a constant table).
absl::Status AuthorizeCall(absl::string_view method, Role role);

// Push carries primary-to-backup copies too (PushRequest.forwarded): only a
// server may forward, and a server may not push as a worker. OK or
// PermissionDenied naming the role needed.
absl::Status AuthorizePush(bool forwarded, Role role);

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_ACCESS_POLICY_H_
