#include "common/initializer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cairn/v1/types.pb.h"
#include "common/hash.h"

namespace cairn {
namespace {

// Uniform in [0, 1) with 24 random bits (exact in float32).
double Unit(uint64_t bits) { return static_cast<double>(bits >> 40) * 0x1.0p-24; }

uint64_t TableSeed(const v1::TableSpec& t) {
  return t.init().seed() ^ Xxh64(t.name());
}

double FanIn(const v1::TableSpec& t) {
  if (t.kind() == v1::TABLE_KIND_SPARSE) return static_cast<double>(t.width());
  if (t.shape_size() >= 2) return static_cast<double>(t.shape(t.shape_size() - 1));
  if (t.shape_size() == 1) return static_cast<double>(t.shape(0));
  return 1.0;
}

// Writes the values of indices first .. first + out.size() - 1 of the stream
// `seed` into `out`. The kind and its constants are looked up once, not per
// value: a pull of rows never pushed fills them here (a zero or constant
// initializer is then a plain fill).
void FillValues(const v1::TableSpec& t, uint64_t seed, uint64_t first, absl::Span<float> out) {
  const v1::InitSpec& init = t.init();
  switch (init.kind()) {
    case v1::INIT_KIND_CONSTANT:
      std::fill(out.begin(), out.end(), init.value());
      return;
    case v1::INIT_KIND_UNIFORM: {
      const double scale = init.scale();
      for (size_t i = 0; i < out.size(); ++i) {
        const double u = Unit(SplitMix64(seed ^ SplitMix64(first + i)));
        out[i] = static_cast<float>((2.0 * u - 1.0) * scale);
      }
      return;
    }
    case v1::INIT_KIND_NORMAL: {
      const double scale = init.scale();
      for (size_t i = 0; i < out.size(); ++i) {
        // Box-Muller over two independent counters.
        const uint64_t base = SplitMix64(seed ^ SplitMix64(first + i));
        const double u1 = 1.0 - Unit(SplitMix64(base));  // (0, 1]
        const double u2 = Unit(SplitMix64(base + 1));
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
        out[i] = static_cast<float>(z * scale);
      }
      return;
    }
    case v1::INIT_KIND_HE_UNIFORM: {
      const double limit = std::sqrt(6.0 / FanIn(t));
      for (size_t i = 0; i < out.size(); ++i) {
        const double u = Unit(SplitMix64(seed ^ SplitMix64(first + i)));
        out[i] = static_cast<float>((2.0 * u - 1.0) * limit);
      }
      return;
    }
    default:  // zeros, unspecified
      std::fill(out.begin(), out.end(), 0.0f);
      return;
  }
}

}  // namespace

void InitDenseElements(const v1::TableSpec& table, uint64_t first_element,
                       absl::Span<float> out) {
  FillValues(table, TableSeed(table), first_element, out);
}

void InitSparseRow(const v1::TableSpec& table, Key key, absl::Span<float> row) {
  // Rows draw from a stream of their own: index = hash(key) mixed with column.
  FillValues(table, TableSeed(table) ^ SplitMix64(key ^ 0x5bd1e995ULL), 0, row);
}

absl::Status ValidateInitSpec(const v1::TableSpec& table) {
  const v1::InitSpec& init = table.init();
  if (init.scale() < 0 || !std::isfinite(init.scale()) || !std::isfinite(init.value())) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", table.name(), ": init scale must be finite and >= 0"));
  }
  if (init.kind() == v1::INIT_KIND_HE_UNIFORM && FanIn(table) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", table.name(), ": he_uniform needs a fan-in > 0"));
  }
  return absl::OkStatus();
}

}  // namespace cairn
