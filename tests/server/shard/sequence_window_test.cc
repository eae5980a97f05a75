// The push de-duplication window (server/shard/sequence_window.h): which
// sequence numbers of one (group, worker, incarnation) count as applied.
#include "server/shard/sequence_window.h"

#include <catch2/catch.hpp>

#include <vector>

namespace cairn {
namespace {

TEST_CASE("in-order sequences move the floor and keep nothing held", "[dedup]") {
  SequenceWindow w;
  CHECK(w.floor() == 1);
  CHECK_FALSE(w.Contains(1));
  for (uint64_t s = 1; s <= 100; ++s) REQUIRE(w.Insert(s));
  CHECK(w.floor() == 101);
  CHECK(w.held().empty());
  CHECK(w.Contains(1));
  CHECK(w.Contains(100));
  CHECK_FALSE(w.Contains(101));
}

TEST_CASE("a sequence applied once is refused again, in order or not", "[dedup]") {
  SequenceWindow w;
  REQUIRE(w.Insert(1));
  CHECK_FALSE(w.Insert(1));
  REQUIRE(w.Insert(4));  // 2 and 3 still in flight
  CHECK(w.floor() == 2);
  CHECK(w.held().size() == 1);
  CHECK_FALSE(w.Insert(4));
  REQUIRE(w.Insert(3));
  CHECK(w.floor() == 2);
  REQUIRE(w.Insert(2));  // the gap closes: everything up to 4 is applied
  CHECK(w.floor() == 5);
  CHECK(w.held().empty());
  for (uint64_t s = 1; s <= 4; ++s) CHECK_FALSE(w.Insert(s));
}

TEST_CASE("past kMaxHeld out-of-order sequences the floor jumps over a gap that never filled",
          "[dedup]") {
  SequenceWindow w;
  // Sequence 1 never arrives; 2 .. kMaxHeld + 2 do.
  for (uint64_t s = 2; s <= SequenceWindow::kMaxHeld + 1; ++s) REQUIRE(w.Insert(s));
  CHECK(w.floor() == 1);
  CHECK(w.held().size() == SequenceWindow::kMaxHeld);
  REQUIRE(w.Insert(SequenceWindow::kMaxHeld + 2));
  CHECK(w.floor() == SequenceWindow::kMaxHeld + 3);
  CHECK(w.held().empty());
  // The lost request, arriving this late, counts as applied: refused.
  CHECK(w.Contains(1));
  CHECK_FALSE(w.Insert(1));
}

TEST_CASE("a window copied from another replica refuses what that one applied", "[dedup]") {
  const SequenceWindow w = SequenceWindow::FromParts(10, {12, 15});
  CHECK(w.Contains(9));
  CHECK_FALSE(w.Contains(10));
  CHECK(w.Contains(12));
  CHECK_FALSE(w.Contains(13));
  CHECK(w.Contains(15));
  SequenceWindow copy = w;
  REQUIRE(copy.Insert(10));
  CHECK(copy.floor() == 11);
  REQUIRE(copy.Insert(11));
  CHECK(copy.floor() == 13);  // 12 was held
}

}  // namespace
}  // namespace cairn
