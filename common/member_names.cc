#include "common/member_names.h"

namespace cairn {

const char* RoleName(v1::MemberRole role) {
  switch (role) {
    case v1::MEMBER_ROLE_SERVER:
      return "server";
    case v1::MEMBER_ROLE_WORKER:
      return "worker";
    default:
      return "unspecified";
  }
}

const char* StateName(v1::MemberState state) {
  switch (state) {
    case v1::MEMBER_STATE_ALIVE:
      return "alive";
    case v1::MEMBER_STATE_DEAD:
      return "dead";
    case v1::MEMBER_STATE_LEFT:
      return "left";
    default:
      return "unspecified";
  }
}

}  // namespace cairn
