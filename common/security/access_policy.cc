#include "common/security/access_policy.h"

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

using R = Role;

struct MethodRoles {
  absl::string_view method;
  std::initializer_list<Role> roles;
};

constexpr std::initializer_list<Role> kEveryRole = {R::kWorker, R::kServer, R::kCoordinator,
                                                    R::kAdmin, R::kClient};

// Workers pull, push and clock; servers register, forward and transfer
// replicas; the coordinator drives checkpoints; admins checkpoint and
// change membership; every role may read the map, the members and Stats.
const MethodRoles kPolicy[] = {
    {"/cairn.v1.Coordinator/RegisterServer", {R::kServer}},
    {"/cairn.v1.Coordinator/RegisterWorker", {R::kWorker}},
    {"/cairn.v1.Coordinator/Heartbeat", {R::kWorker, R::kServer}},
    {"/cairn.v1.Coordinator/GetPartitionMap", kEveryRole},
    {"/cairn.v1.Coordinator/WatchPartitionMap", kEveryRole},
    {"/cairn.v1.Coordinator/Leave", {R::kWorker, R::kServer, R::kAdmin}},
    {"/cairn.v1.Coordinator/ListMembers", kEveryRole},
    {"/cairn.v1.Coordinator/ReportCheckpoint", {R::kServer}},
    {"/cairn.v1.Coordinator/Checkpoint", {R::kAdmin}},
    {"/cairn.v1.Coordinator/ListCheckpoints", {R::kServer, R::kAdmin, R::kClient}},
    {"/cairn.v1.Coordinator/ReplicaReady", {R::kServer}},
    {"/cairn.v1.ParameterService/Pull", {R::kWorker}},
    {"/cairn.v1.ParameterService/Push", {R::kWorker, R::kServer}},  // see AuthorizePush
    {"/cairn.v1.ParameterService/Clock", {R::kWorker}},
    {"/cairn.v1.ParameterService/Stats", kEveryRole},
    {"/cairn.v1.ParameterService/Checkpoint", {R::kCoordinator, R::kAdmin}},
    {"/cairn.v1.ParameterService/Replicate", {R::kServer}},
    {"/cairn.v1.ParameterService/OpenRegion", {R::kWorker}},
    {"/grpc.health.v1.Health/Check", kEveryRole},
    {"/grpc.health.v1.Health/Watch", kEveryRole},
};

std::string Names(std::initializer_list<Role> roles) {
  std::string out;
  for (Role r : roles) absl::StrAppend(&out, out.empty() ? "" : " or ", RoleName(r));
  return out;
}

}  // namespace

absl::Status AuthorizeCall(absl::string_view method, Role role) {
  for (const MethodRoles& m : kPolicy) {
    if (m.method != method) continue;
    for (Role r : m.roles) {
      if (r == role) return absl::OkStatus();
    }
    return absl::PermissionDeniedError(absl::StrCat(method, " needs role ", Names(m.roles),
                                                    "; the caller has role ", RoleName(role)));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(method, " is not a method any role may call"));
}

absl::Status AuthorizePush(bool forwarded, Role role) {
  if (forwarded && role != Role::kServer) {
    return absl::PermissionDeniedError(absl::StrCat(
        "a forwarded Push (a primary's copy to its backup) needs role server; the caller has "
        "role ", RoleName(role)));
  }
  if (!forwarded && role != Role::kWorker) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Push needs role worker; the caller has role ", RoleName(role)));
  }
  return absl::OkStatus();
}

}  // namespace cairn
