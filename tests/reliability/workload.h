// The deterministic workload of the reliability tests: what each worker
// pushes at each step is a pure function of (worker, step, table, key), so
// the oracle (oracle.h) recomputes every delta instead of storing it.
//
// Jobs under test use plain SGD with learning rate 1, zeros init and BSP
// aggregation `sum`, and the gradients are small integers in [-3, 3]. Float32
// adds integers below 2^24 exactly and in any order, so a parameter's value
// is exactly -(sum of the gradients applied to it), whatever the order of
// application (|sum| < 2^24 holds while workers * steps * 3 < 16777216).
//
// Per step, a worker pushes (a) the whole dense table, element i getting
// Gradient(worker, step, dense_table, i, 0), and (b) sparse_keys_per_step
// distinct rows of the sparse table, picked from the key universe
// SparseKey(0) .. SparseKey(sparse_key_count - 1), column c of row k getting
// Gradient(worker, step, sparse_table, k, c).
//
// Everything here is a pure function; safe to call from any thread.
#ifndef CAIRN_TESTS_RELIABILITY_WORKLOAD_H_
#define CAIRN_TESTS_RELIABILITY_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/bytes.h"

namespace cairn::reliability {

// The tables a worker pushes to and their sizes. Immutable value type.
struct Workload {
  std::string dense_table;       // "" when the job has no dense table
  int64_t dense_size = 0;        // float32 elements of the dense table
  std::string sparse_table;      // "" when the job has no sparse table
  int sparse_width = 0;          // floats per embedding row
  int sparse_key_count = 0;      // size of the key universe
  int sparse_keys_per_step = 0;  // distinct rows per push, <= sparse_key_count

  // InvalidArgument naming the field when a size is out of range.
  absl::Status Validate() const;
  // The workload's table names (dense first), skipping empty ones.
  std::vector<std::string> Tables() const;
};

// One worker's push to one table at one step. Dense: `keys` is empty and
// `values` holds the whole tensor (element i = Gradient(.., i, 0)). Sparse:
// `keys` sorted ascending and unique, `values` keys.size() * width floats,
// row-major.
struct TableDelta {
  std::string table;
  bool sparse = false;
  std::vector<Key> keys;
  std::vector<float> values;
};

// The gradient of one element, an integer in [-3, 3]. Dense tables: `key` is
// the element index and `column` 0. Sparse tables: `key` the row's key and
// `column` in [0, width).
float Gradient(int worker, int64_t step, absl::string_view table, Key key, int column);

// Key `index` of the sparse key universe; distinct for distinct indexes and
// spread over the whole 64-bit space (so every partition gets some).
Key SparseKey(int index);

// The whole key universe, sorted ascending.
std::vector<Key> SparseKeyUniverse(const Workload& workload);

// The rows worker `worker` pushes at `step`: sparse_keys_per_step distinct
// keys of the universe, sorted ascending.
std::vector<Key> SparseStepKeys(const Workload& workload, int worker, int64_t step);

// The push of `worker` at `step` to `table`. NotFound when `table` is not one
// of the workload's tables.
absl::StatusOr<TableDelta> StepDelta(const Workload& workload, absl::string_view table, int worker,
                                     int64_t step);

// XXH64 (seed 0) of the keys' bytes followed by the values' bytes (the wire
// encoding of common/bytes.h), as 16 lowercase hex digits. The history
// records it so the oracle can check each record against the workload.
std::string DeltaChecksum(absl::Span<const Key> keys, absl::Span<const float> values);

}  // namespace cairn::reliability

#endif  // CAIRN_TESTS_RELIABILITY_WORKLOAD_H_
