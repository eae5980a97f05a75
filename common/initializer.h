// Seeded, placement-independent initial values of tables.
//
// Every element's initial value is a pure function of (init spec, table name,
// element position): a counter-based generator (SplitMix64 finaliser over
// seed ^ XXH64(table name) and the element's index) rather than a stream RNG,
// so a dense chunk or a sparse embedding row gets the same value whichever
// server creates it, in whatever order, and `cairn-worker --local` gets the
// same model as a job through Cairn.
//
// Thread-safe (pure functions).
#ifndef CAIRN_COMMON_INITIALIZER_H_
#define CAIRN_COMMON_INITIALIZER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/bytes.h"

namespace cairn {
namespace v1 {
class TableSpec;
}

// Fills `out` with the initial values of dense elements
// [first_element, first_element + out.size()) of `table` (flattened row-major).
void InitDenseElements(const v1::TableSpec& table, uint64_t first_element,
                       absl::Span<float> out);

// Fills `row` (table.width() floats) with the initial value of embedding row `key`.
void InitSparseRow(const v1::TableSpec& table, Key key, absl::Span<float> row);

// InvalidArgument when the init spec is unusable for the table (negative
// scale, fan_in of zero), naming the table.
absl::Status ValidateInitSpec(const v1::TableSpec& table);

}  // namespace cairn

#endif  // CAIRN_COMMON_INITIALIZER_H_
