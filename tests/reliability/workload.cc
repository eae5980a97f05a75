#include "tests/reliability/workload.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace cairn::reliability {
namespace {

// FNV-1a, so table names hash the same in every process and build.
uint64_t NameHash(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t StepSeed(int worker, int64_t step) {
  return SplitMix64(SplitMix64(static_cast<uint64_t>(worker) ^ 0x5eed) ^ static_cast<uint64_t>(step));
}

}  // namespace

absl::Status Workload::Validate() const {
  if (dense_table.empty() && sparse_table.empty()) {
    return absl::InvalidArgumentError("workload: neither a dense nor a sparse table");
  }
  if (!dense_table.empty() && dense_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload: dense table ", dense_table, ": dense_size ", dense_size, " < 1"));
  }
  if (!sparse_table.empty()) {
    if (sparse_width < 1) {
      return absl::InvalidArgumentError(absl::StrCat("workload: sparse table ", sparse_table,
                                                     ": sparse_width ", sparse_width, " < 1"));
    }
    if (sparse_key_count < 1 || sparse_keys_per_step < 1 ||
        sparse_keys_per_step > sparse_key_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workload: sparse table ", sparse_table, ": need 1 <= sparse_keys_per_step (",
          sparse_keys_per_step, ") <= sparse_key_count (", sparse_key_count, ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> Workload::Tables() const {
  std::vector<std::string> tables;
  if (!dense_table.empty()) tables.push_back(dense_table);
  if (!sparse_table.empty()) tables.push_back(sparse_table);
  return tables;
}

float Gradient(int worker, int64_t step, absl::string_view table, Key key, int column) {
  uint64_t h = SplitMix64(NameHash(table) ^ StepSeed(worker, step));
  h = SplitMix64(h ^ key);
  h = SplitMix64(h ^ static_cast<uint64_t>(column));
  return static_cast<float>(static_cast<int>(h % 7) - 3);
}

Key SparseKey(int index) {
  // Multiplying by an odd constant is a bijection of uint64.
  return static_cast<Key>(index) * 0x9e3779b97f4a7c15ull;
}

std::vector<Key> SparseKeyUniverse(const Workload& workload) {
  std::vector<Key> keys;
  keys.reserve(workload.sparse_key_count);
  for (int i = 0; i < workload.sparse_key_count; ++i) keys.push_back(SparseKey(i));
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<Key> SparseStepKeys(const Workload& workload, int worker, int64_t step) {
  // Partial Fisher-Yates over [0, count) with a sparse swap map: O(k), and
  // the same picks on every platform (no std:: distributions involved).
  const int64_t count = workload.sparse_key_count;
  const int64_t k = std::min<int64_t>(workload.sparse_keys_per_step, count);
  std::unordered_map<int64_t, int64_t> swapped;
  auto at = [&swapped](int64_t i) {
    auto it = swapped.find(i);
    return it == swapped.end() ? i : it->second;
  };
  const uint64_t seed = StepSeed(worker, step) ^ NameHash(workload.sparse_table);
  std::vector<Key> keys;
  keys.reserve(k);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = i + static_cast<int64_t>(SplitMix64(seed + static_cast<uint64_t>(i)) %
                                               static_cast<uint64_t>(count - i));
    const int64_t picked = at(j);
    swapped[j] = at(i);
    keys.push_back(SparseKey(static_cast<int>(picked)));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

absl::StatusOr<TableDelta> StepDelta(const Workload& workload, absl::string_view table, int worker,
                                     int64_t step) {
  TableDelta delta;
  delta.table = std::string(table);
  if (!table.empty() && table == workload.dense_table) {
    delta.values.resize(workload.dense_size);
    for (int64_t i = 0; i < workload.dense_size; ++i) {
      delta.values[i] = Gradient(worker, step, table, static_cast<Key>(i), 0);
    }
    return delta;
  }
  if (!table.empty() && table == workload.sparse_table) {
    delta.sparse = true;
    delta.keys = SparseStepKeys(workload, worker, step);
    delta.values.reserve(delta.keys.size() * workload.sparse_width);
    for (Key key : delta.keys) {
      for (int c = 0; c < workload.sparse_width; ++c) {
        delta.values.push_back(Gradient(worker, step, table, key, c));
      }
    }
    return delta;
  }
  return absl::NotFoundError(absl::StrCat("table \"", table, "\" is not in the workload (dense \"",
                                          workload.dense_table, "\", sparse \"",
                                          workload.sparse_table, "\")"));
}

std::string DeltaChecksum(absl::Span<const Key> keys, absl::Span<const float> values) {
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  XXH64_update(state, keys.data(), keys.size() * sizeof(Key));
  XXH64_update(state, values.data(), values.size() * sizeof(float));
  const uint64_t h = XXH64_digest(state);
  XXH64_freeState(state);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace cairn::reliability
