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

}  // namespace cairn

#endif  // CAIRN_COMMON_STATUS_CONVERSION_H_
