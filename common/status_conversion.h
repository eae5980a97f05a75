// Converts between grpc::Status and absl::Status (absl codes are the gRPC codes).
#ifndef CAIRN_COMMON_STATUS_CONVERSION_H_
#define CAIRN_COMMON_STATUS_CONVERSION_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace cairn {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// FAILED_PRECONDITION carrying a cairn.v1.StaleMapDetail with `current_version`
// in the binary error details, so clients can tell it from other failures
// without parsing text.
grpc::Status StaleMapStatus(uint64_t request_version, uint64_t current_version);

// The current map version when `status` is a stale-map rejection, else nullopt.
std::optional<uint64_t> StaleMapVersion(const grpc::Status& status);

// Marks an absl::Status as a stale-map rejection (payload kept through
// FromGrpcStatus) and reads it back.
absl::Status MakeStaleMapError(uint64_t request_version, uint64_t current_version);
std::optional<uint64_t> StaleMapVersion(const absl::Status& status);

// `status` (FAILED_PRECONDITION) with the same stale-map payload: the
// request and this server disagree on the partition map (a request routed
// by an older or newer map than this server's, version `current_version`),
// so the caller refreshes its map and retries; StaleMapVersion() reads it.
// Clients decide on that payload, never on the message's text.
absl::Status WithCurrentMap(absl::Status status, uint64_t current_version);

}  // namespace cairn

#endif  // CAIRN_COMMON_STATUS_CONVERSION_H_
