#include "common/security/roles.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cairn {
namespace {

constexpr std::array<Role, 5> kRoles = {Role::kWorker, Role::kServer, Role::kCoordinator,
                                        Role::kAdmin, Role::kClient};

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kWorker: return "worker";
    case Role::kServer: return "server";
    case Role::kCoordinator: return "coordinator";
    case Role::kAdmin: return "admin";
    case Role::kClient: return "client";
  }
  return "unknown";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role r : kRoles) {
    if (RoleName(r) == name) return r;
  }
  return std::nullopt;
}

std::optional<Role> RoleFromSubject(absl::string_view subject) {
  // Values with escaped commas ("\,") cannot name a role, so a plain split
  // is enough: a part that is not exactly OU=<role> is skipped.
  for (absl::string_view part : absl::StrSplit(subject, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!absl::ConsumePrefix(&part, "OU=")) continue;
    if (std::optional<Role> r = ParseRole(part)) return r;
  }
  return std::nullopt;
}

std::string AllRoleNames() {
  std::string out;
  for (Role r : kRoles) {
    absl::StrAppend(&out, out.empty() ? "" : "|", RoleName(r));
  }
  return out;
}

}  // namespace cairn
