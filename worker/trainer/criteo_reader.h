// Reads click-through-rate data in the Criteo display-advertising format
// (the Kaggle "Display Advertising Challenge" and Criteo 1TB logs files, and
// what tools/ctr-generate writes): one example per line, tab-separated,
//   label (0 or 1), 13 integer features, 26 categorical features,
// where a categorical value is a hexadecimal id (8 digits in Criteo's files)
// and any feature may be empty (missing). Lines end with '\n' ("\r\n" too).
//
// Every error names the file, the line (1-based) and, for a bad value, the
// field (I1..I13, C1..C26, as Criteo's documentation numbers them) and the
// text: InvalidArgument for a malformed line (field count, label, integer,
// id), DataLoss for a last line cut short (no newline and too few fields),
// NotFound for a missing file. Nothing is returned on an error.
// Thread-safe (no shared state).
#ifndef CAIRN_WORKER_TRAINER_CRITEO_READER_H_
#define CAIRN_WORKER_TRAINER_CRITEO_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn {

inline constexpr int kCriteoIntegerFeatures = 13;
inline constexpr int kCriteoCategoricalFeatures = 26;

// The id of a missing categorical value (all 64 bits set). The hexadecimal
// id ffffffffffffffff is refused, so the two never meet.
inline constexpr uint64_t kCriteoMissingId = ~uint64_t{0};

// Examples column by column.
struct CriteoData {
  int64_t size = 0;
  std::vector<float> labels;        // size; 0 or 1
  // size x 13, row-major: the integer as read (Criteo's files have a few
  // negative ones); a missing value is 0 and marked in `integer_present`.
  std::vector<int64_t> integers;
  std::vector<uint8_t> integer_present;  // size x 13; 1 when the field was not empty
  // size x 26, row-major: each categorical id as a number (hexadecimal
  // text, at most 16 digits), kCriteoMissingId when empty.
  std::vector<uint64_t> ids;
};

// Reads `path`; with `max_examples` > 0, stops after that many.
absl::StatusOr<CriteoData> ReadCriteo(const std::string& path, int64_t max_examples = 0);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_CRITEO_READER_H_
