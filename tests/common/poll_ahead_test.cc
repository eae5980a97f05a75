// PollAhead (common/poll_ahead.h): when a thread polls again for an event
// that comes at a steady pace later than its busy-poll window.
#include "common/poll_ahead.h"

#include <catch2/catch.hpp>

namespace cairn {
namespace {

using absl::Milliseconds;

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST_CASE("PollAhead says nothing before a wait has outlasted the window", "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  CHECK_FALSE(ahead.Again(kStart).has_value());
  // Waits within the window are caught by the window: they do not count.
  ahead.Record(Milliseconds(1));
  ahead.Record(Milliseconds(2));
  CHECK_FALSE(ahead.Again(kStart).has_value());
}

TEST_CASE("PollAhead polls a window on either side of one wait's length", "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  ahead.Record(Milliseconds(20));
  const std::optional<PollAhead::Span> span = ahead.Again(kStart);
  REQUIRE(span.has_value());
  CHECK(span->from == kStart + Milliseconds(18));
  CHECK(span->until == kStart + Milliseconds(22));
}

TEST_CASE("PollAhead covers the middle half of the recent waits", "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  // A step's pace with jitter, two waits cut short by other events and a
  // long pause.
  for (int ms : {26, 25, 10, 27, 29, 60, 14, 28}) ahead.Record(Milliseconds(ms));
  const std::optional<PollAhead::Span> span = ahead.Again(kStart);
  REQUIRE(span.has_value());
  // Sorted: 10 14 | 25 26 27 28 | 29 60.
  CHECK(span->from == kStart + Milliseconds(23));   // 25 - 2
  CHECK(span->until == kStart + Milliseconds(30));  // 28 + 2
}

TEST_CASE("PollAhead polls again for a wait of four waits less their extremes",
          "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  for (int ms : {30, 9, 31, 70}) ahead.Record(Milliseconds(ms));
  const std::optional<PollAhead::Span> span = ahead.Again(kStart);
  REQUIRE(span.has_value());
  CHECK(span->from == kStart + Milliseconds(28));   // 30 - 2
  CHECK(span->until == kStart + Milliseconds(33));  // 31 + 2
}

TEST_CASE("PollAhead polls again for at most a quarter of the wait or four windows",
          "[poll_ahead]") {
  PollAhead ahead(Milliseconds(1));
  for (int ms : {40, 40, 80, 80, 80, 80}) ahead.Record(Milliseconds(ms));
  const std::optional<PollAhead::Span> span = ahead.Again(kStart);
  REQUIRE(span.has_value());
  CHECK(span->from == kStart + Milliseconds(39));
  CHECK(span->until == kStart + Milliseconds(49));  // 39 + 40 / 4, not 80 + 1
}

TEST_CASE("PollAhead forgets waits older than its history", "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  for (int i = 0; i < PollAhead::kHistory; ++i) ahead.Record(Milliseconds(90));
  for (int i = 0; i < PollAhead::kHistory; ++i) ahead.Record(Milliseconds(10));
  const std::optional<PollAhead::Span> span = ahead.Again(kStart);
  REQUIRE(span.has_value());
  CHECK(span->from == kStart + Milliseconds(8));
  CHECK(span->until == kStart + Milliseconds(12));
}

TEST_CASE("PollAhead does not poll again for waits of kMaxWait or more", "[poll_ahead]") {
  PollAhead ahead(Milliseconds(2));
  for (int i = 0; i < 4; ++i) ahead.Record(PollAhead::kMaxWait);
  CHECK_FALSE(ahead.Again(kStart).has_value());
  // A window of zero (busy polling off) never polls again.
  PollAhead off(absl::ZeroDuration());
  off.Record(Milliseconds(20));
  CHECK_FALSE(off.Again(kStart).has_value());
}

}  // namespace
}  // namespace cairn
