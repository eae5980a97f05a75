#include "common/config/units.h"

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

using u128 = unsigned __int128;

constexpr char kDurationForms[] = "durations need a unit: 500ms, 3s, 1.5s, 2m or 1h";
constexpr int64_t kMaxDurationMs = 1'000'000LL * 3'600'000LL;  // 10^6 hours
constexpr int64_t kMaxSizeBytes = int64_t{1} << 62;

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Milliseconds per unit, or 0 for an unknown unit.
int64_t UnitMs(absl::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  return 0;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseDuration(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) ||
                             text[i] == '.')) {
    ++i;
  }
  const absl::string_view number(text.data(), i);
  const absl::string_view unit = absl::string_view(text).substr(i);
  if (number.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration; ", kDurationForms));
  }
  if (unit.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" has no unit; ", kDurationForms));
  }
  const int64_t unit_ms = UnitMs(unit);
  if (unit_ms == 0) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": unknown unit \"", unit,
                                                   "\"; ", kDurationForms));
  }
  const size_t dot = number.find('.');
  const absl::string_view whole = number.substr(0, dot);
  const absl::string_view frac =
      dot == absl::string_view::npos ? absl::string_view() : number.substr(dot + 1);
  if (!AllDigits(whole) || (dot != absl::string_view::npos && !AllDigits(frac)) ||
      whole.size() > 18 || frac.size() > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration; ", kDurationForms));
  }
  uint64_t whole_value = 0, frac_value = 0;
  if (!absl::SimpleAtoi(whole, &whole_value) ||
      (!frac.empty() && !absl::SimpleAtoi(frac, &frac_value))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration; ", kDurationForms));
  }
  u128 scale = 1;
  for (size_t k = 0; k < frac.size(); ++k) scale *= 10;
  // value_ms = (whole + frac / scale) * unit_ms, exactly.
  const u128 scaled_ms = (u128(whole_value) * scale + frac_value) * u128(unit_ms);
  if (scaled_ms % scale != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a whole number of milliseconds"));
  }
  const u128 ms = scaled_ms / scale;
  if (ms > u128(kMaxDurationMs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is too long (at most 1000000h)"));
  }
  return absl::Milliseconds(static_cast<int64_t>(ms));
}

absl::StatusOr<int64_t> ParseSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const absl::string_view number(text.data(), i);
  absl::string_view unit = absl::string_view(text).substr(i);
  if (unit.size() > 1 && unit.front() == ' ') unit.remove_prefix(1);  // "64 MiB"
  if (number.empty() || number.size() > 19) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\" is not a size; write bytes (1048576) or 512KiB, 64MiB, 1GiB"));
  }
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "KiB") shift = 10;
  if (unit == "MiB") shift = 20;
  if (unit == "GiB") shift = 30;
  if (unit == "KB" || unit == "MB" || unit == "GB" || unit == "kB") {
    const char binary = unit[0] == 'k' ? 'K' : unit[0];
    const int power = binary == 'K' ? 10 : binary == 'M' ? 20 : 30;
    const int decimal_zeros = binary == 'K' ? 3 : binary == 'M' ? 6 : 9;
    u128 n = 0;
    for (char c : number) n = n * 10 + static_cast<unsigned>(c - '0');
    const u128 binary_bytes = n << power;
    std::string decimal(number);
    decimal.append(decimal_zeros, '0');
    std::string binary_text = binary_bytes > u128(kMaxSizeBytes)
                                  ? std::string("too large")
                                  : absl::StrCat(static_cast<int64_t>(binary_bytes), " bytes");
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\" is ambiguous (", unit, " means 10^", decimal_zeros,
        " to some tools and 2^", power, " to others): write ", number, std::string(1, binary), "iB (",
        binary_text, ") or ", decimal, " (bytes)"));
  }
  if (shift < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\": unknown unit \"", unit, "\"; sizes take B, KiB, MiB, GiB or none"));
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(number, &n) || (u128(n) << shift) > u128(kMaxSizeBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is too large (at most 4194304TiB)"));
  }
  return static_cast<int64_t>(n << shift);
}

std::string FormatDurationForConfig(absl::Duration d) {
  const int64_t ms = absl::ToInt64Milliseconds(d);
  if (ms != 0 && ms % 3'600'000 == 0) return absl::StrCat(ms / 3'600'000, "h");
  if (ms != 0 && ms % 60'000 == 0) return absl::StrCat(ms / 60'000, "m");
  if (ms != 0 && ms % 1000 == 0) return absl::StrCat(ms / 1000, "s");
  return absl::StrCat(ms, "ms");
}

std::string FormatSizeForConfig(int64_t bytes) {
  if (bytes != 0 && bytes % (int64_t{1} << 30) == 0) return absl::StrCat(bytes >> 30, "GiB");
  if (bytes != 0 && bytes % (int64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, "MiB");
  if (bytes != 0 && bytes % (int64_t{1} << 10) == 0) return absl::StrCat(bytes >> 10, "KiB");
  return absl::StrCat(bytes);
}

}  // namespace cairn
