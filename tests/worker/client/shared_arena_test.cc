// SharedArena (worker/client/shared_arena.h): first fit, merging on free,
// quarantined blocks never reused.
#include "worker/client/shared_arena.h"

#include <catch2/catch.hpp>

namespace cairn {
namespace {

TEST_CASE("blocks are aligned, first fit, and merge back when freed", "[shared_memory]") {
  SharedArena arena(64, 64 + 1024);
  CHECK(arena.capacity() == 1024);
  auto a = arena.Allocate(100);  // 128 with alignment
  auto b = arena.Allocate(256);
  auto c = arena.Allocate(64);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  REQUIRE(c.has_value());
  CHECK(*a == 64);
  CHECK(*b == 64 + 128);
  CHECK(*c == 64 + 128 + 256);
  CHECK(arena.allocated_bytes() == 128 + 256 + 64);
  CHECK_FALSE(arena.Allocate(1024).has_value());
  arena.Free(*b);
  // First fit: the hole b left.
  auto d = arena.Allocate(200);
  REQUIRE(d.has_value());
  CHECK(*d == *b);
  arena.Free(*d);
  arena.Free(*a);
  arena.Free(*c);
  CHECK(arena.allocated_bytes() == 0);
  // Everything merged into one block again.
  auto all = arena.Allocate(1024);
  REQUIRE(all.has_value());
  CHECK(*all == 64);
  CHECK_FALSE(arena.Allocate(1).has_value());
  CHECK_FALSE(arena.Allocate(0).has_value());
}

TEST_CASE("a quarantined block is never handed out again", "[shared_memory]") {
  SharedArena arena(0, 512);
  auto a = arena.Allocate(256);
  auto b = arena.Allocate(256);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  arena.Quarantine(*a);
  arena.Free(*b);
  CHECK(arena.quarantined_bytes() == 256);
  CHECK(arena.allocated_bytes() == 0);
  CHECK_FALSE(arena.Allocate(512).has_value());
  auto again = arena.Allocate(256);
  REQUIRE(again.has_value());
  CHECK(*again == *b);
  arena.Free(*a);  // no effect: not in use any more
  CHECK(arena.quarantined_bytes() == 256);
}

}  // namespace
}  // namespace cairn
