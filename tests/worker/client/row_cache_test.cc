// The worker-side cache (worker/client/row_cache.h): the freshness rule of
// each consistency mode, invalidation by pushes (read-my-writes, B15), the
// memory bound with LRU eviction, and pulls that race with a push.
#include "worker/client/row_cache.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace cairn {
namespace {

v1::TableSpec Spec(v1::Consistency consistency, int64_t staleness = 0) {
  v1::TableSpec t;
  t.set_name("t");
  t.set_consistency(consistency);
  t.set_staleness(staleness);
  return t;
}

// Looks up one key of `floats` floats; returns the value or NaN on a miss.
float LookupOne(RowCache& cache, Key key, const Freshness& need, int64_t* oldest = nullptr) {
  float value = std::numeric_limits<float>::quiet_NaN();
  float* out[] = {&value};
  const uint32_t floats[] = {1};
  const Key keys[] = {key};
  std::vector<bool> hit;
  int64_t ignored = std::numeric_limits<int64_t>::max();
  cache.Lookup(0, keys, need, out, floats, &hit, oldest != nullptr ? oldest : &ignored);
  return value;
}

}  // namespace

TEST_CASE("SSP serves an entry while its min clock is within the bound", "[client][cache]") {
  RowCache cache(1 << 20);
  const float v = 4.0f;
  cache.Insert(0, 7, absl::MakeConstSpan(&v, 1), /*min_clock=*/5, /*fetch_clock=*/6, 0);
  const v1::TableSpec ssp2 = Spec(v1::CONSISTENCY_SSP, 2);
  int64_t oldest = std::numeric_limits<int64_t>::max();
  // Iteration 7 needs min clock >= 5: a hit, and the read reflects clock 5.
  CHECK(LookupOne(cache, 7, Freshness::For(ssp2, 7), &oldest) == 4.0f);
  CHECK(oldest == 5);
  // Iteration 8 needs >= 6: the entry is too stale.
  CHECK(std::isnan(LookupOne(cache, 7, Freshness::For(ssp2, 8))));
  CHECK(std::isnan(LookupOne(cache, 8, Freshness::For(ssp2, 7))));  // never cached
}

TEST_CASE("BSP hits only within the iteration the value was read for", "[client][cache]") {
  RowCache cache(1 << 20);
  const float v = 1.5f;
  cache.Insert(0, 0, absl::MakeConstSpan(&v, 1), /*min_clock=*/3, /*fetch_clock=*/3, 0);
  const v1::TableSpec bsp = Spec(v1::CONSISTENCY_BSP);
  CHECK(LookupOne(cache, 0, Freshness::For(bsp, 3)) == 1.5f);
  CHECK(std::isnan(LookupOne(cache, 0, Freshness::For(bsp, 4))));
}

TEST_CASE("ASP tables are not cached: their reads always go to the servers", "[client][cache]") {
  CHECK_FALSE(Cacheable(Spec(v1::CONSISTENCY_ASP)));
  CHECK(Cacheable(Spec(v1::CONSISTENCY_SSP, 3)));
  CHECK(Cacheable(Spec(v1::CONSISTENCY_BSP)));
}

TEST_CASE("B15: a push invalidates its keys even when the copy is fresh enough",
          "[client][cache][B15]") {
  RowCache cache(1 << 20);
  const float v = 0.0f;
  const v1::TableSpec ssp2 = Spec(v1::CONSISTENCY_SSP, 2);
  cache.Insert(0, 1, absl::MakeConstSpan(&v, 1), 4, 4, cache.Generation(0));
  cache.Insert(0, 2, absl::MakeConstSpan(&v, 1), 4, 4, cache.Generation(0));
  REQUIRE(LookupOne(cache, 1, Freshness::For(ssp2, 5)) == 0.0f);
  const Key pushed[] = {1};
  cache.Invalidate(0, pushed);
  CHECK(std::isnan(LookupOne(cache, 1, Freshness::For(ssp2, 5))));
  CHECK(LookupOne(cache, 2, Freshness::For(ssp2, 5)) == 0.0f);  // not pushed: still cached
  CHECK(cache.num_entries() == 1);
}

TEST_CASE("a pull that started before a push does not cache its values", "[client][cache]") {
  RowCache cache(1 << 20);
  const uint64_t before = cache.Generation(0);
  const Key pushed[] = {3};
  cache.Invalidate(0, pushed);  // the push happened while the pull was in flight
  const float v = 1.0f;
  CHECK(cache.Insert(0, 3, absl::MakeConstSpan(&v, 1), 1, 1, before) == 0);
  CHECK(cache.num_entries() == 0);
  cache.Insert(0, 3, absl::MakeConstSpan(&v, 1), 1, 1, cache.Generation(0));
  CHECK(cache.num_entries() == 1);
  // Other tables keep their own generation.
  CHECK(cache.Generation(1) == 0);
}

TEST_CASE("an older value never replaces a fresher one", "[client][cache]") {
  RowCache cache(1 << 20);
  const float newer = 2.0f, older = 1.0f;
  cache.Insert(0, 0, absl::MakeConstSpan(&newer, 1), 6, 6, 0);
  cache.Insert(0, 0, absl::MakeConstSpan(&older, 1), 5, 6, 0);
  CHECK(LookupOne(cache, 0, Freshness::For(Spec(v1::CONSISTENCY_SSP, 0), 6)) == 2.0f);
}

TEST_CASE("the cache stays within its capacity, evicting the least recently used",
          "[client][cache]") {
  // Each entry: 4 floats (16 bytes) + overhead; room for exactly 3.
  const uint64_t entry = 16 + RowCache::kEntryOverheadBytes;
  RowCache cache(3 * entry);
  const std::vector<float> row(4, 1.0f);
  for (Key k = 0; k < 3; ++k) CHECK(cache.Insert(0, k, row, 0, 0, 0) == 0);
  CHECK(cache.bytes() == 3 * entry);
  // Touch key 0 so key 1 is the least recently used.
  std::vector<float> out(4);
  float* outs[] = {out.data()};
  const uint32_t floats[] = {4};
  const Key key0[] = {0};
  std::vector<bool> hit;
  int64_t oldest = 0;
  REQUIRE(cache.Lookup(0, key0, Freshness{0, 0}, outs, floats, &hit, &oldest) == 1);
  CHECK(cache.Insert(0, 3, row, 0, 0, 0) == 1);
  CHECK(cache.bytes() == 3 * entry);
  CHECK(cache.evictions() == 1);
  const Key key1[] = {1};
  CHECK(cache.Lookup(0, key1, Freshness{0, 0}, outs, floats, &hit, &oldest) == 0);
  CHECK(cache.Lookup(0, key0, Freshness{0, 0}, outs, floats, &hit, &oldest) == 1);
  // An entry larger than the whole cache is not kept; a disabled cache keeps nothing.
  CHECK(cache.Insert(0, 9, std::vector<float>(1000, 0.0f), 0, 0, 0) == 0);
  CHECK(cache.num_entries() == 3);
  RowCache off(0);
  off.Insert(0, 0, row, 0, 0, 0);
  CHECK(off.num_entries() == 0);
  CHECK_FALSE(off.enabled());
}

TEST_CASE("a value of the wrong length is a miss", "[client][cache]") {
  RowCache cache(1 << 20);
  cache.Insert(0, 0, std::vector<float>(3, 1.0f), 0, 0, 0);
  std::vector<float> out(4);
  float* outs[] = {out.data()};
  const uint32_t floats[] = {4};
  const Key keys[] = {0};
  std::vector<bool> hit;
  int64_t oldest = 0;
  CHECK(cache.Lookup(0, keys, Freshness{0, 0}, outs, floats, &hit, &oldest) == 0);
}

}  // namespace cairn
