#include "common/status_conversion.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cairn/v1/types.pb.h"

namespace cairn {
namespace {
constexpr char kStaleMapUrl[] = "type.cairn/cairn.v1.StaleMapDetail";
}  // namespace

absl::Status MakeStaleMapError(uint64_t request_version, uint64_t current_version) {
  absl::Status status = absl::FailedPreconditionError(
      absl::StrCat("stale partition map: request has version ", request_version,
                   ", server holds version ", current_version));
  v1::StaleMapDetail detail;
  detail.set_current_version(current_version);
  status.SetPayload(kStaleMapUrl, absl::Cord(detail.SerializeAsString()));
  return status;
}

absl::Status WithCurrentMap(absl::Status status, uint64_t current_version) {
  v1::StaleMapDetail detail;
  detail.set_current_version(current_version);
  status.SetPayload(kStaleMapUrl, absl::Cord(detail.SerializeAsString()));
  return status;
}

std::optional<uint64_t> StaleMapVersion(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kStaleMapUrl);
  if (!payload) return std::nullopt;
  v1::StaleMapDetail detail;
  if (!detail.ParseFromString(std::string(*payload))) return std::nullopt;
  return detail.current_version();
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string details;
  if (std::optional<uint64_t> v = StaleMapVersion(status)) {
    v1::StaleMapDetail detail;
    detail.set_current_version(*v);
    details = detail.SerializeAsString();
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()), details);
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()),
                   status.error_message());
  if (std::optional<uint64_t> v = StaleMapVersion(status)) {
    out = MakeStaleMapError(0, *v);
    out = absl::Status(out.code(), status.error_message());
    v1::StaleMapDetail detail;
    detail.set_current_version(*v);
    out.SetPayload(kStaleMapUrl, absl::Cord(detail.SerializeAsString()));
  }
  return out;
}

grpc::Status StaleMapStatus(uint64_t request_version, uint64_t current_version) {
  return ToGrpcStatus(MakeStaleMapError(request_version, current_version));
}

std::optional<uint64_t> StaleMapVersion(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return std::nullopt;
  if (status.error_details().empty()) return std::nullopt;
  v1::StaleMapDetail detail;
  if (!detail.ParseFromString(status.error_details())) return std::nullopt;
  return detail.current_version();
}

}  // namespace cairn
