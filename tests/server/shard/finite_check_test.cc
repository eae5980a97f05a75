// The servers' test of a pushed gradient for NaN and Inf
// (server/shard/table.h): AllFinite over whole blocks and the tail, and
// CheckFinite's error naming the table, the key and the offset, on one
// thread and split over two.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/cpu_affinity.h"
#include "server/shard/fork_join.h"
#include "server/shard/table.h"

namespace cairn {
namespace {

bool Finite(const std::vector<float>& v) {
  return AllFinite(reinterpret_cast<const char*>(v.data()), v.size());
}

TEST_CASE("AllFinite finds a NaN or Inf at any offset, in a block or the tail", "[shard][finite]") {
  const float kBad[] = {std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::quiet_NaN()};
  for (size_t n : {1u, 7u, 255u, 256u, 257u, 1000u, 4096u}) {
    std::vector<float> v(n, 1.0f);
    REQUIRE(Finite(v));
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      for (float bad : kBad) {
        std::vector<float> w = v;
        w[at] = bad;
        INFO("n " << n << " at " << at << " value " << bad);
        CHECK_FALSE(Finite(w));
      }
    }
  }
  // Extremes that are finite: the largest, the smallest normal, a denormal,
  // negative zero.
  std::vector<float> edge(300, 0.0f);
  edge[3] = std::numeric_limits<float>::max();
  edge[4] = -std::numeric_limits<float>::max();
  edge[5] = std::numeric_limits<float>::min();
  edge[6] = std::numeric_limits<float>::denorm_min();
  edge[290] = -0.0f;
  CHECK(Finite(edge));
  CHECK(AllFinite(nullptr, 0));
}

TEST_CASE("CheckFinite names the table, the key and the offset of the first bad value",
          "[shard][finite]") {
  v1::TableSpec spec;
  spec.set_name("emb");
  spec.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  const std::vector<Key> keys = {11, 12, 13};
  std::vector<float> values(3 * 4, 0.5f);
  values[9] = std::numeric_limits<float>::infinity();  // key 13, the third row of 4
  const std::string key_bytes(reinterpret_cast<const char*>(keys.data()),
                              keys.size() * sizeof(Key));
  const std::string value_bytes(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(float));
  const absl::Status s = CheckFinite(spec, key_bytes, value_bytes, 4);
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("push table=emb key 13: gradient value inf at offset 9 is not finite"));

  spec.set_non_finite(v1::NON_FINITE_POLICY_ALLOW);
  CHECK(CheckFinite(spec, key_bytes, value_bytes, 4).ok());
}

// A push of ForkJoin::kMinSplitBytes or more is checked in pieces on the
// caller and the helper: a bad value at the start, the middle or the end is
// found and named as on one thread.
TEST_CASE("CheckFinite split over two threads finds a bad value in any piece",
          "[shard][finite][fork_join]") {
  v1::TableSpec spec;
  spec.set_name("w");
  spec.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  constexpr size_t kPerKey = 16384;
  const size_t n = ForkJoin::kMinSplitBytes / sizeof(float) + 3 * kPerKey;
  std::vector<Key> keys(n / kPerKey);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  const std::string key_bytes(reinterpret_cast<const char*>(keys.data()),
                              keys.size() * sizeof(Key));
  ForkJoin helper(AllowedCpus());  // on one CPU too: the pieces take turns
  std::vector<float> values(n, 0.25f);
  auto check = [&] {
    const std::string bytes(reinterpret_cast<const char*>(values.data()), n * sizeof(float));
    return CheckFinite(spec, key_bytes, bytes, kPerKey, &helper);
  };
  CHECK(check().ok());
  for (size_t at : {size_t{5}, n / 2, n - 1}) {
    values[at] = std::numeric_limits<float>::quiet_NaN();
    const absl::Status s = check();
    REQUIRE(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()),
               Catch::Contains(absl::StrCat("push table=w key ", at / kPerKey,
                                            ": gradient value nan at offset ", at)));
    values[at] = 0.25f;
  }
}

}  // namespace
}  // namespace cairn
