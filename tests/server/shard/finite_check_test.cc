// The servers' test of a pushed gradient for NaN and Inf
// (server/shard/table.h): AllFinite over whole blocks and the tail, and
// CheckFinite's error naming the table, the key and the offset.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/bytes.h"
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

}  // namespace
}  // namespace cairn
