// Names of member roles and states as logs, metrics labels and cairnctl
// print them.
#ifndef CAIRN_COMMON_MEMBER_NAMES_H_
#define CAIRN_COMMON_MEMBER_NAMES_H_

#include "cairn/v1/types.pb.h"

namespace cairn {

// "server" / "worker" / "unspecified" (the metric label value too).
const char* RoleName(v1::MemberRole role);
// "alive" / "dead" / "left" / "unspecified".
const char* StateName(v1::MemberState state);

}  // namespace cairn

#endif  // CAIRN_COMMON_MEMBER_NAMES_H_
