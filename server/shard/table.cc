#include "server/shard/table.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/initializer.h"
#include "common/partitioning.h"
#include "common/status_macros.h"
#include "server/optimizer/internal/update_loop.h"
#include "server/shard/dense_table.h"
#include "server/shard/fork_join.h"
#include "server/shard/sparse_table.h"

namespace cairn {

uint32_t Table::PartitionOf(Key key) const {
  if (spec_.kind() == v1::TABLE_KIND_SPARSE) return SparsePartition(key, num_partitions_);
  return DensePartition(key, NumChunks(DenseNumElements(spec_), spec_.chunk_size()),
                        num_partitions_, spec_.partition_offset());
}

absl::StatusOr<std::unique_ptr<Table>> Table::Create(const v1::TableSpec& spec,
                                                     uint32_t num_partitions,
                                                     const std::vector<bool>& owned,
                                                     ColdRowStore* cold, ForkJoin* helper) {
  if (num_partitions == 0 || owned.size() != num_partitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", spec.name(), ": partition ownership of size ", owned.size(),
                     " for ", num_partitions, " partitions"));
  }
  RETURN_IF_ERROR(ValidateInitSpec(spec));
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, MakeOptimizer(spec.optimizer()));
  if (spec.kind() == v1::TABLE_KIND_DENSE) {
    if (DenseNumElements(spec) == 0 || spec.chunk_size() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", spec.name(), ": dense table needs a non-empty shape and chunk_size > 0"));
    }
    return std::unique_ptr<Table>(
        new DenseTable(spec, num_partitions, owned, std::move(optimizer), helper));
  }
  if (spec.kind() == v1::TABLE_KIND_SPARSE) {
    if (spec.width() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", spec.name(), ": sparse table needs width > 0"));
    }
    if (spec.cold_tier() && cold == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", spec.name(), ": cold_tier needs the server's cold tier store"));
    }
    return std::unique_ptr<Table>(new SparseTable(spec, num_partitions, owned,
                                                  std::move(optimizer),
                                                  spec.cold_tier() ? cold : nullptr));
  }
  return absl::InvalidArgumentError(absl::StrCat("table ", spec.name(), ": unknown kind"));
}

absl::Status CheckRowsShape(const std::string& name, const PartitionRows& rows,
                            int slots_per_element) {
  const size_t n = rows.keys.size();
  if (rows.lengths.size() != n || rows.steps.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", name, ": ", n, " keys with ", rows.lengths.size(), " lengths and ",
        rows.steps.size(), " update counts"));
  }
  if (rows.slots_per_element != slots_per_element) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", name, ": rows carry ", rows.slots_per_element,
        " optimizer slots per element, the table's optimizer keeps ", slots_per_element));
  }
  // An update count is the next step's base (Adam's bias correction needs
  // step >= 1); a negative one, or one that cannot be incremented, comes
  // from no table.
  for (size_t i = 0; i < n; ++i) {
    if (rows.steps[i] < 0 || rows.steps[i] == std::numeric_limits<int64_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("table ", name, ": key ", rows.keys[i],
                                                     " has update count ", rows.steps[i],
                                                     " (expected 0 up to 2^63-2)"));
    }
  }
  uint64_t floats = 0;
  for (uint32_t len : rows.lengths) floats += len;
  if (rows.values.size() != floats ||
      rows.slots.size() != floats * static_cast<uint64_t>(slots_per_element)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", name, ": rows of ", floats, " floats carry ", rows.values.size(),
        " values and ", rows.slots.size(), " slots (expected ",
        floats * static_cast<uint64_t>(slots_per_element), ")"));
  }
  return absl::OkStatus();
}

bool KeysAscending(const std::string& keys, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    if (KeyAt(keys, i - 1) >= KeyAt(keys, i)) return false;
  }
  return true;
}

CAIRN_UPDATE_LOOP
bool AllFinite(const char* floats, size_t n) {
  // A binary32 value is NaN or infinite exactly when its 8 exponent bits are
  // all ones (IEEE 754). Each value's bits are loaded in place (no
  // alignment needed, no copy into a buffer); a fixed-length block
  // vectorises, and the test stops at the first block with a bad value.
  constexpr uint32_t kExponent = 0x7f800000u;
  constexpr size_t kBlock = 1024;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const char* block = floats + i * sizeof(float);
    uint32_t bad = 0;
    for (size_t j = 0; j < kBlock; ++j) {
      uint32_t bits;
      std::memcpy(&bits, block + j * sizeof(float), sizeof(bits));
      bad |= static_cast<uint32_t>((bits & kExponent) == kExponent);
    }
    if (bad != 0) return false;
  }
  for (; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, floats + i * sizeof(float), sizeof(bits));
    if ((bits & kExponent) == kExponent) return false;
  }
  return true;
}

absl::Status CheckFinite(const v1::TableSpec& spec, const std::string& keys,
                         absl::string_view values, uint64_t floats_per_key, ForkJoin* helper,
                         uint64_t first) {
  if (spec.non_finite() == v1::NON_FINITE_POLICY_ALLOW) return absl::OkStatus();
  const size_t n = values.size() / sizeof(float);
  const float* v = reinterpret_cast<const float*>(values.data());
  std::atomic<bool> finite{true};
  ForkJoin::ForRanges(helper, n, values.size(), [&](size_t begin, size_t end) {
    if (!AllFinite(values.data() + begin * sizeof(float), end - begin)) finite.store(false);
  });
  if (finite.load()) return absl::OkStatus();
  for (size_t j = 0; j < n; ++j) {
    if (std::isfinite(v[j])) continue;
    const uint64_t i = first + j;
    // Dense keys carry variable-length chunks; name the key by offset when the
    // row length is not uniform.
    std::string where;
    if (floats_per_key > 0 && keys.size() >= (i / floats_per_key + 1) * sizeof(Key)) {
      where = absl::StrCat(" key ", KeyAt(keys, i / floats_per_key));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "push table=", spec.name(), where, ": gradient value ", v[j], " at offset ", i,
        " is not finite (table policy non_finite: reject)"));
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(const v1::TableSpec& spec, const std::string& keys,
                         const ValuePieces& pieces, uint64_t floats_per_key) {
  if (spec.non_finite() == v1::NON_FINITE_POLICY_ALLOW) return absl::OkStatus();
  const bool finite = ForEachValueRun(
      pieces, sizeof(float), [](const char* bytes, size_t n) { return AllFinite(bytes, n); });
  if (finite) return absl::OkStatus();
  // The error names the first value that is not: from the values joined.
  const uint64_t bytes = PiecesBytes(pieces);
  auto joined = std::make_unique_for_overwrite<float[]>(bytes / sizeof(float) + 1);
  CopyPieces(pieces, reinterpret_cast<char*>(joined.get()));
  return CheckFinite(spec, keys, absl::string_view(reinterpret_cast<char*>(joined.get()), bytes),
                     floats_per_key);
}

}  // namespace cairn
