// Durations and sizes as written in a job's YAML file and on command lines.
//
// Durations: a non-negative number and one unit, no space: `500ms`, `3s`,
// `1.5s`, `2m`, `1h` (ms, s, m, h). The value must be a whole number of
// milliseconds. A bare number such as `3` is an error: seconds or
// milliseconds would both be plausible readings.
//
// Sizes: a non-negative integer, optionally followed by a unit (a space
// between is allowed): `B`, `KiB` (2^10), `MiB` (2^20), `GiB` (2^30); no unit
// means bytes. `KB`, `MB` and `GB` are rejected: they are read as powers of
// 1000 by some tools and powers of 1024 by others, and the error names both
// exact spellings (`64MiB` for 67108864 bytes, `64000000` for 64 * 10^6).
//
// Thread-safe (pure functions).
#ifndef CAIRN_COMMON_CONFIG_UNITS_H_
#define CAIRN_COMMON_CONFIG_UNITS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn {

// Parses "500ms", "3s", "1.5s", "2m", "1h". InvalidArgument (the message
// names the accepted forms, not a key: callers prefix it) on a missing or
// unknown unit, a negative or malformed number, a fraction of a millisecond,
// or a value above 10^6 hours.
absl::StatusOr<absl::Duration> ParseDuration(const std::string& text);

// Parses "123", "123B", "512KiB", "64MiB", "1GiB", "64 MiB" into bytes.
// InvalidArgument on a malformed number, an unknown or ambiguous (KB/MB/GB)
// unit, or a result above 2^62 bytes.
absl::StatusOr<int64_t> ParseSize(const std::string& text);

// The shortest exact form ParseDuration reads back: "1h", "90s", "500ms".
// `d` must be a non-negative whole number of milliseconds; a finer part is
// truncated.
std::string FormatDurationForConfig(absl::Duration d);

// The shortest exact form ParseSize reads back: "256MiB", "1536KiB", "1000".
std::string FormatSizeForConfig(int64_t bytes);

}  // namespace cairn

#endif  // CAIRN_COMMON_CONFIG_UNITS_H_
