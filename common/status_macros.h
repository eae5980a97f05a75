// RETURN_IF_ERROR and ASSIGN_OR_RETURN: propagate absl::Status values.
//
// Debian 12's Abseil (20220623) has no absl/status/status_macros.h; these two
// macros have the same meaning as the ones newer Abseil ships.
#ifndef CAIRN_COMMON_STATUS_MACROS_H_
#define CAIRN_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CAIRN_STATUS_CONCAT_INNER_(x, y) x##y
#define CAIRN_STATUS_CONCAT_(x, y) CAIRN_STATUS_CONCAT_INNER_(x, y)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status cairn_status_ = (expr);                 \
    if (!cairn_status_.ok()) return cairn_status_;         \
  } while (false)

// `lhs` = value of `rexpr` (an absl::StatusOr<T>), or returns its status.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                          \
  CAIRN_ASSIGN_OR_RETURN_IMPL_(CAIRN_STATUS_CONCAT_(cairn_statusor_, __LINE__), \
                               lhs, rexpr)
#define CAIRN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace cairn {

// Prefixes `status`'s message with `context` ("pull table=w1: ..."); OK stays OK.
// The code and every payload are kept: a stale-map detail
// (common/status_conversion.h) is what tells a worker to refresh its map
// and retry.
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(), std::string(context) + ": " + std::string(status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace cairn

#endif  // CAIRN_COMMON_STATUS_MACROS_H_
