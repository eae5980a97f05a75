// Durations and sizes as written in configs (common/config/units.h).
#include "common/config/units.h"

#include <catch2/catch.hpp>

#include <string>

namespace cairn {

TEST_CASE("durations with units parse to exact milliseconds", "[config][units]") {
  struct Case {
    const char* text;
    int64_t ms;
  };
  const Case cases[] = {
      {"0ms", 0},         {"1ms", 1},        {"500ms", 500},         {"3000ms", 3000},
      {"3s", 3000},       {"1.5s", 1500},    {"0.001s", 1},          {"2m", 120000},
      {"1.5m", 90000},    {"1h", 3600000},   {"0.25h", 900000},      {"60s", 60000},
      {"1000000h", 3600000000000},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const absl::StatusOr<absl::Duration> d = ParseDuration(c.text);
    REQUIRE(d.ok());
    CHECK(absl::ToInt64Milliseconds(*d) == c.ms);
    CHECK(*d == absl::Milliseconds(c.ms));
  }
}

TEST_CASE("durations without a valid unit are rejected with the accepted forms",
          "[config][units][B25]") {
  const char* bad[] = {"3",    "3000", "",     "s",     "-3s",  "3 s",  "3sec", "3S",
                       "1d",   "3us",  "1.s",  ".5s",   "1e3ms", "0.5ms", "1.0001s", "3s ",
                       "1000001h", "99999999999999999999h", "1h30m"};
  for (const char* text : bad) {
    INFO("\"" << text << "\"");
    const absl::StatusOr<absl::Duration> d = ParseDuration(text);
    CHECK_FALSE(d.ok());
  }
  const absl::StatusOr<absl::Duration> unitless = ParseDuration("3");
  REQUIRE_FALSE(unitless.ok());
  const std::string message(unitless.status().message());
  CHECK_THAT(message, Catch::Contains("no unit"));
  CHECK_THAT(message, Catch::Contains("500ms") && Catch::Contains("3s") &&
                          Catch::Contains("2m") && Catch::Contains("1h"));
}

TEST_CASE("sizes parse binary units and plain byte counts", "[config][units]") {
  struct Case {
    const char* text;
    int64_t bytes;
  };
  const Case cases[] = {
      {"0", 0},                 {"123", 123},              {"123B", 123},
      {"1KiB", 1024},           {"512KiB", 524288},        {"1MiB", 1048576},
      {"64MiB", 67108864},      {"256MiB", 268435456},     {"1GiB", 1073741824},
      {"3GiB", 3221225472},     {"64 MiB", 67108864},      {"4611686018427387904", int64_t{1} << 62},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const absl::StatusOr<int64_t> n = ParseSize(c.text);
    REQUIRE(n.ok());
    CHECK(*n == c.bytes);
  }
}

TEST_CASE("malformed sizes are rejected", "[config][units]") {
  const char* bad[] = {"",      "MiB",   "-1",     "1.5MiB", "1 ",   "1TiB", "1mib",
                       "1Mi",   "1 B ",  "0x10",   "1e6",    "10  MiB",
                       "4611686018427387905", "4294967297GiB", "99999999999999999999"};
  for (const char* text : bad) {
    INFO("\"" << text << "\"");
    CHECK_FALSE(ParseSize(text).ok());
  }
}

TEST_CASE("B25: decimal-or-binary units are rejected, naming both exact spellings",
          "[config][units][B25]") {
  // "64MB" is 64 * 10^6 bytes to some tools and 64 * 2^20 to others; neither
  // is taken silently.
  const absl::StatusOr<int64_t> n = ParseSize("64MB");
  REQUIRE_FALSE(n.ok());
  const std::string message(n.status().message());
  CHECK_THAT(message, Catch::Contains("ambiguous"));
  CHECK_THAT(message, Catch::Contains("64MiB (67108864 bytes)"));
  CHECK_THAT(message, Catch::Contains("64000000"));
  CHECK_FALSE(ParseSize("1KB").ok());
  CHECK_FALSE(ParseSize("1kB").ok());
  CHECK_FALSE(ParseSize("2GB").ok());
}

TEST_CASE("formatted durations and sizes parse back to the same value", "[config][units]") {
  CHECK(FormatDurationForConfig(absl::Milliseconds(500)) == "500ms");
  CHECK(FormatDurationForConfig(absl::Seconds(5)) == "5s");
  CHECK(FormatDurationForConfig(absl::Seconds(90)) == "90s");
  CHECK(FormatDurationForConfig(absl::Minutes(2)) == "2m");
  CHECK(FormatDurationForConfig(absl::Hours(3)) == "3h");
  CHECK(FormatDurationForConfig(absl::ZeroDuration()) == "0ms");
  CHECK(FormatSizeForConfig(268435456) == "256MiB");
  CHECK(FormatSizeForConfig(1536 * 1024) == "1536KiB");
  CHECK(FormatSizeForConfig(int64_t{2} << 30) == "2GiB");
  CHECK(FormatSizeForConfig(1000) == "1000");
  CHECK(FormatSizeForConfig(0) == "0");
  for (int64_t ms : {1, 999, 1000, 1500, 60000, 61000, 3600000, 5400000}) {
    INFO(ms);
    const absl::StatusOr<absl::Duration> back =
        ParseDuration(FormatDurationForConfig(absl::Milliseconds(ms)));
    REQUIRE(back.ok());
    CHECK(*back == absl::Milliseconds(ms));
  }
  for (int64_t bytes : {int64_t{1}, int64_t{1023}, int64_t{1024}, int64_t{3} << 20,
                        int64_t{5} << 30, int64_t{1} << 62}) {
    INFO(bytes);
    const absl::StatusOr<int64_t> back = ParseSize(FormatSizeForConfig(bytes));
    REQUIRE(back.ok());
    CHECK(*back == bytes);
  }
}

}  // namespace cairn
