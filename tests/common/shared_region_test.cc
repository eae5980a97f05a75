// SharedRegion (common/shared_region.h): a sealed memfd, opened a second
// time through /proc as a server on the same host does.
#include "common/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

namespace cairn {
namespace {

TEST_CASE("a region written through one mapping reads back through another", "[shared_memory]") {
  auto region = SharedRegion::Create(1 << 20);
  REQUIRE(region.ok());
  REQUIRE((*region)->size() == (1u << 20));
  REQUIRE((*region)->token().size() == SharedRegion::kTokenBytes);
  auto opened =
      SharedRegion::Open(getpid(), (*region)->fd(), (*region)->size(), (*region)->token());
  INFO(opened.status().message());
  REQUIRE(opened.ok());
  auto out = (*region)->Range(SharedRegion::kHeaderBytes, 8);
  REQUIRE(out.ok());
  std::memcpy(out->data(), "abcdefgh", 8);
  auto in = (*opened)->Range(SharedRegion::kHeaderBytes, 8);
  REQUIRE(in.ok());
  CHECK(std::string(in->data(), 8) == "abcdefgh");
  // The creator cannot shrink it under the other side's reads.
  CHECK(ftruncate((*region)->fd(), 4096) != 0);
}

TEST_CASE("ranges outside the values, or over the header, are refused", "[shared_memory]") {
  auto region = SharedRegion::Create(4096);
  REQUIRE(region.ok());
  CHECK((*region)->Range(SharedRegion::kHeaderBytes, 4096 - SharedRegion::kHeaderBytes).ok());
  CHECK((*region)->Range(4096, 0).ok());
  CHECK((*region)->Range(0, 16).status().code() == absl::StatusCode::kOutOfRange);
  CHECK((*region)->Range(4000, 97).status().code() == absl::StatusCode::kOutOfRange);
  CHECK((*region)->Range(5000, 1).status().code() == absl::StatusCode::kOutOfRange);
  // An offset near 2^64: no wrap-around.
  CHECK((*region)->Range(~0ull - 10, 100).status().code() == absl::StatusCode::kOutOfRange);
  CHECK_THAT(std::string((*region)->Range(4000, 97).status().message()),
             Catch::Contains("4096 bytes"));
  CHECK(SharedRegion::Create(SharedRegion::kHeaderBytes).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("opening refuses another token, another size, a missing descriptor and an unsealed "
          "memfd",
          "[shared_memory]") {
  auto region = SharedRegion::Create(1 << 16);
  REQUIRE(region.ok());
  const int fd = (*region)->fd();
  const std::string token = (*region)->token();
  auto bad_token = SharedRegion::Open(getpid(), fd, 1 << 16, std::string(16, 'x'));
  CHECK(bad_token.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(bad_token.status().message()), Catch::Contains("token"));
  auto bad_size = SharedRegion::Open(getpid(), fd, 1 << 17, token);
  CHECK(bad_size.status().code() == absl::StatusCode::kFailedPrecondition);
  auto short_token = SharedRegion::Open(getpid(), fd, 1 << 16, "abc");
  CHECK(short_token.status().code() == absl::StatusCode::kFailedPrecondition);
  auto no_fd = SharedRegion::Open(getpid(), 99999, 1 << 16, token);
  CHECK(no_fd.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(no_fd.status().message()), Catch::Contains("/proc/"));

  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  REQUIRE(unsealed >= 0);
  REQUIRE(ftruncate(unsealed, 1 << 16) == 0);
  auto open_unsealed = SharedRegion::Open(getpid(), unsealed, 1 << 16, token);
  close(unsealed);
  CHECK(open_unsealed.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(open_unsealed.status().message()), Catch::Contains("sealed"));
}

}  // namespace
}  // namespace cairn
