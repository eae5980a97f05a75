// Status conversion between absl and gRPC, and the stale-map detail that
// clients decide retries on (never the message's text).
#include "common/status_conversion.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/status_macros.h"

namespace cairn {
namespace {

TEST_CASE("codes and messages survive absl -> gRPC -> absl", "[common][status]") {
  for (const absl::Status& s :
       {absl::InvalidArgumentError("push table=w: shape mismatch"), absl::NotFoundError("x"),
        absl::UnavailableError("server 1 is shutting down"),
        absl::DeadlineExceededError("late"), absl::FailedPreconditionError("left")}) {
    const grpc::Status g = ToGrpcStatus(s);
    CHECK(static_cast<int>(g.error_code()) == static_cast<int>(s.code()));
    CHECK(g.error_message() == s.message());
    CHECK(g.error_details().empty());
    CHECK(FromGrpcStatus(g) == s);
    CHECK_FALSE(StaleMapVersion(g).has_value());
  }
  CHECK(ToGrpcStatus(absl::OkStatus()).ok());
  CHECK(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST_CASE("a stale-map rejection carries the server's version across the wire",
          "[common][status]") {
  const absl::Status stale = MakeStaleMapError(3, 7);
  CHECK(stale.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(StaleMapVersion(stale) == 7u);
  const grpc::Status wire = ToGrpcStatus(stale);
  CHECK(StaleMapVersion(wire) == 7u);
  const absl::Status back = FromGrpcStatus(wire);
  CHECK(back.message() == stale.message());
  CHECK(StaleMapVersion(back) == 7u);
  CHECK(StaleMapVersion(StaleMapStatus(1, 9)) == 9u);
}

TEST_CASE("a request routed by another map is marked for a refresh whatever its message",
          "[common][status]") {
  const absl::Status routed = WithCurrentMap(
      absl::FailedPreconditionError("server 2 does not hold replica group 1 as primary"), 12);
  CHECK(routed.message() == "server 2 does not hold replica group 1 as primary");
  const grpc::Status wire = ToGrpcStatus(routed);
  CHECK(StaleMapVersion(wire) == 12u);
  CHECK(StaleMapVersion(FromGrpcStatus(wire)) == 12u);
  // The same text without the detail is not a reason to retry.
  CHECK_FALSE(StaleMapVersion(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                           "server 2 does not hold replica group 1"))
                  .has_value());
  // Only FAILED_PRECONDITION carries it.
  absl::Status other = absl::UnavailableError("x");
  other = WithCurrentMap(other, 4);
  CHECK_FALSE(StaleMapVersion(other).has_value());
}

TEST_CASE("a stale-map rejection annotated with its context still asks for a refresh",
          "[common][status]") {
  // A pull of a key this server does not hold (the worker's map routed it
  // elsewhere) is annotated on its way out; the detail must survive, or
  // the worker takes it for a final error instead of refreshing its map.
  const absl::Status routed = Annotate(
      WithCurrentMap(absl::FailedPreconditionError(
                         "table w: key 0 is in partition 7, which this server does not hold"),
                     9),
      "pull");
  CHECK(routed.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(routed.message() ==
        "pull: table w: key 0 is in partition 7, which this server does not hold");
  CHECK(StaleMapVersion(routed) == 9u);
  CHECK(StaleMapVersion(ToGrpcStatus(routed)) == 9u);
  CHECK(Annotate(absl::OkStatus(), "pull").ok());
  CHECK_FALSE(StaleMapVersion(Annotate(absl::UnavailableError("x"), "pull")).has_value());
}

}  // namespace
}  // namespace cairn
