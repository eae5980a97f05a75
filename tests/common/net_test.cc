// host:port parsing (common/net.h). Field case B20: bad coordinator addresses
// fail at validation naming the setting; IPv6 literals in brackets parse.
#include "common/net.h"

#include <catch2/catch.hpp>

#include <string>

namespace cairn {
namespace {

std::string Message(const absl::StatusOr<HostPort>& r) { return std::string(r.status().message()); }

}  // namespace

TEST_CASE("B20: an IPv4 literal with an octet above 255 is rejected naming the key",
          "[net][B20]") {
  const absl::StatusOr<HostPort> r = ParseHostPort("10.0.0.300:5000", "cluster.coordinator");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(r), Catch::Contains("cluster.coordinator"));
  CHECK_THAT(Message(r), Catch::Contains("10.0.0.300"));
}

TEST_CASE("B20: a port above 65535 is rejected naming the key", "[net][B20]") {
  const absl::StatusOr<HostPort> r = ParseHostPort("host:99999", "cluster.coordinator");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(Message(r), Catch::Contains("cluster.coordinator"));
  CHECK_THAT(Message(r), Catch::Contains("99999"));
}

TEST_CASE("B20: a bracketed IPv6 literal parses", "[net][B20]") {
  const absl::StatusOr<HostPort> r = ParseHostPort("[::1]:5000", "cluster.coordinator");
  REQUIRE(r.ok());
  CHECK(r->host == "::1");
  CHECK(r->port == 5000);
  CHECK(FormatHostPort(r->host, r->port) == "[::1]:5000");
}

TEST_CASE("host:port accepts names and IPv4 literals", "[net]") {
  absl::StatusOr<HostPort> r = ParseHostPort("coordinator.example.com:7070", "k");
  REQUIRE(r.ok());
  CHECK(r->host == "coordinator.example.com");
  CHECK(r->port == 7070);
  r = ParseHostPort("10.0.0.255:1", "k");
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.0.255");
  CHECK(r->port == 1);
  r = ParseHostPort("[2001:db8::7]:65535", "k");
  REQUIRE(r.ok());
  CHECK(r->host == "2001:db8::7");
  CHECK(r->port == 65535);
}

TEST_CASE("malformed addresses are rejected", "[net]") {
  const char* bad[] = {"",           "host",          ":5000",        "host:",
                       "host:0",     "host:-1",       "host:5x",      "::1:5000",
                       "[::1]5000",  "[::1]",         "[nothost]:80", "1.2.3:80",
                       "host:65536", "[::1:5000"};
  for (const char* text : bad) {
    INFO("address \"" << text << "\"");
    const absl::StatusOr<HostPort> r = ParseHostPort(text, "metrics.host");
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK_THAT(Message(r), Catch::Contains("metrics.host"));
  }
}

TEST_CASE("port 0 is accepted only when asked for", "[net]") {
  CHECK_FALSE(ParseHostPort("127.0.0.1:0", "k").ok());
  const absl::StatusOr<HostPort> r = ParseHostPort("127.0.0.1:0", "k", /*allow_zero_port=*/true);
  REQUIRE(r.ok());
  CHECK(r->port == 0);
}

TEST_CASE("loopback and unspecified hosts are recognised", "[net][B20]") {
  for (const char* host : {"localhost", "127.0.0.1", "127.0.1.1", "0.0.0.0", "::", "::1"}) {
    INFO(host);
    CHECK(IsLoopbackOrUnspecified(host));
  }
  for (const char* host : {"10.0.0.1", "192.168.1.2", "2001:db8::1", "node-3.cluster"}) {
    INFO(host);
    CHECK_FALSE(IsLoopbackOrUnspecified(host));
  }
}

}  // namespace cairn
