#include "common/config/internal/map_reader.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/internal/suggest.h"
#include "common/config/units.h"

namespace cairn::config_internal {
namespace {

bool IsBareInteger(const std::string& s) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// -?digits[.digits][e[+-]digits], with at least one digit in the mantissa.
bool IsBareNumber(const std::string& s) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  size_t digits = 0;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
      ++i, ++exp_digits;
    }
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::string DescribeNumberRange(const NumberRange& r) {
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  if (has_min && has_max) {
    return absl::StrCat("a number in ", r.min_open ? "(" : "[", r.min, ", ", r.max,
                        r.max_open ? ")" : "]");
  }
  if (has_min) return absl::StrCat("a number ", r.min_open ? "> " : ">= ", r.min);
  if (has_max) return absl::StrCat("a number ", r.max_open ? "< " : "<= ", r.max);
  return "a number";
}

bool InRange(double v, const NumberRange& r) {
  if (r.min_open ? !(v > r.min) : !(v >= r.min)) return false;
  if (r.max_open ? !(v < r.max) : !(v <= r.max)) return false;
  return true;
}

}  // namespace

absl::Status ErrorAt(const std::string& where, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

std::string DescribeIntRange(int64_t min, int64_t max) {
  constexpr int64_t kUnbounded = std::numeric_limits<int32_t>::max();
  if (max >= kUnbounded) {
    return min == 0 ? "a non-negative integer" : absl::StrCat("an integer >= ", min);
  }
  return absl::StrCat("an integer in [", min, ", ", max, "]");
}

absl::StatusOr<MapReader> MapReader::Open(const YamlNode& node, const std::string& path,
                                          std::vector<std::string> known) {
  const std::string name = path.empty() ? "the top level" : absl::StrCat("`", path, "`");
  if (node.IsNull()) {
    return ErrorAt(node.where, absl::StrCat(name, " has no value; write `", path,
                                            ": {}` to keep every default"));
  }
  if (!node.IsMap()) {
    return ErrorAt(node.where, absl::StrCat(name, " must be a map of keys; got ",
                                            Describe(node)));
  }
  for (const YamlEntry& e : node.entries) {
    if (std::find(known.begin(), known.end(), e.key) != known.end()) continue;
    const std::string full = path.empty() ? e.key : absl::StrCat(path, ".", e.key);
    const std::string suggestion = Suggest(e.key, known);
    const std::string hint = suggestion.empty()
                                 ? absl::StrCat("known keys: ", absl::StrJoin(known, ", "))
                                 : absl::StrCat("did you mean `", suggestion, "`?");
    return ErrorAt(e.key_where, absl::StrCat("unknown key `", full, "` (", hint, ")"));
  }
  return MapReader(&node, path);
}

std::string MapReader::Path(const std::string& key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

std::string MapReader::Where(const std::string& key) const {
  const YamlNode* v = node_->Find(key);
  return v != nullptr ? v->where : node_->where;
}

absl::Status MapReader::Error(const std::string& key, const std::string& message) const {
  return ErrorAt(Where(key), absl::StrCat("`", Path(key), "` ", message));
}

absl::StatusOr<const YamlNode*> MapReader::Scalar(const std::string& key,
                                                  const char* expected) const {
  const YamlNode* v = node_->Find(key);
  if (v == nullptr) return nullptr;
  if (v->IsNull()) return Error(key, absl::StrCat("has no value; expected ", expected));
  if (!v->IsScalar()) {
    return Error(key, absl::StrCat("must be ", expected, "; got ", Describe(*v)));
  }
  return v;
}

absl::Status MapReader::Int(const std::string& key, int64_t min, int64_t max,
                            int64_t* out) const {
  const std::string expected = DescribeIntRange(min, max);
  absl::StatusOr<const YamlNode*> v = Scalar(key, expected.c_str());
  if (!v.ok() || *v == nullptr) return v.status();
  int64_t value = 0;
  if (!(*v)->plain || !IsBareInteger((*v)->scalar)) {
    return Error(key, absl::StrCat("must be ", expected, "; got ", Describe(**v)));
  }
  if (!absl::SimpleAtoi((*v)->scalar, &value)) {
    return Error(key, absl::StrCat("must be ", expected, "; got ", (*v)->scalar,
                                   " (out of range)"));
  }
  if (value < min || (value > max && max < std::numeric_limits<int32_t>::max())) {
    return Error(key, absl::StrCat("must be ", expected, "; got ", value));
  }
  if (value > max) return Error(key, absl::StrCat("must be at most ", max, "; got ", value));
  *out = value;
  return absl::OkStatus();
}

absl::Status MapReader::Int32(const std::string& key, int32_t min, int32_t max,
                              int* out) const {
  int64_t value = *out;
  if (absl::Status s = Int(key, min, max, &value); !s.ok()) return s;
  *out = static_cast<int>(value);
  return absl::OkStatus();
}

absl::Status MapReader::Uint64(const std::string& key, uint64_t* out) const {
  constexpr char kExpected[] = "an integer in [0, 18446744073709551615]";
  absl::StatusOr<const YamlNode*> v = Scalar(key, kExpected);
  if (!v.ok() || *v == nullptr) return v.status();
  uint64_t value = 0;
  if (!(*v)->plain || !IsBareInteger((*v)->scalar) || (*v)->scalar[0] == '-' ||
      !absl::SimpleAtoi((*v)->scalar, &value)) {
    return Error(key, absl::StrCat("must be ", kExpected, "; got ", Describe(**v)));
  }
  *out = value;
  return absl::OkStatus();
}

absl::Status MapReader::Double(const std::string& key, const NumberRange& range,
                               double* out) const {
  const std::string expected = DescribeNumberRange(range);
  absl::StatusOr<const YamlNode*> v = Scalar(key, expected.c_str());
  if (!v.ok() || *v == nullptr) return v.status();
  double value = 0;
  if (!(*v)->plain || !IsBareNumber((*v)->scalar) || !absl::SimpleAtod((*v)->scalar, &value) ||
      !std::isfinite(value) || !InRange(value, range)) {
    return Error(key, absl::StrCat("must be ", expected, "; got ", Describe(**v)));
  }
  *out = value;
  return absl::OkStatus();
}

absl::Status MapReader::Float(const std::string& key, const NumberRange& range,
                              float* out) const {
  double value = *out;
  if (absl::Status s = Double(key, range, &value); !s.ok()) return s;
  *out = static_cast<float>(value);
  return absl::OkStatus();
}

absl::Status MapReader::Bool(const std::string& key, bool* out) const {
  absl::StatusOr<const YamlNode*> v = Scalar(key, "true or false");
  if (!v.ok() || *v == nullptr) return v.status();
  const std::string& s = (*v)->scalar;
  if ((*v)->plain && (s == "true" || s == "false")) {
    *out = s == "true";
    return absl::OkStatus();
  }
  if (!(*v)->plain) {
    return Error(key, absl::StrCat("must be true or false, without quotes; got ", Describe(**v)));
  }
  static const char* const kNotBooleans[] = {"yes", "no", "on", "off", "y", "n", "true", "false"};
  const std::string lower = absl::AsciiStrToLower(s);
  for (const char* word : kNotBooleans) {
    if (lower == word) {
      return Error(key, absl::StrCat("must be true or false; got ", Describe(**v),
                                     " (use true/false: YAML 1.1 spellings such as "
                                     "yes/no/on/off are not accepted)"));
    }
  }
  return Error(key, absl::StrCat("must be true or false; got ", Describe(**v)));
}

absl::Status MapReader::String(const std::string& key, bool non_empty, std::string* out) const {
  absl::StatusOr<const YamlNode*> v = Scalar(key, "a string");
  if (!v.ok() || *v == nullptr) return v.status();
  if (non_empty && (*v)->scalar.empty()) return Error(key, "must not be empty");
  *out = (*v)->scalar;
  return absl::OkStatus();
}

absl::Status MapReader::Choice(const std::string& key, const std::vector<std::string>& choices,
                               std::string* out) const {
  const std::string expected = absl::StrCat("one of ", absl::StrJoin(choices, ", "));
  absl::StatusOr<const YamlNode*> v = Scalar(key, expected.c_str());
  if (!v.ok() || *v == nullptr) return v.status();
  if (std::find(choices.begin(), choices.end(), (*v)->scalar) == choices.end()) {
    const std::string suggestion = Suggest((*v)->scalar, choices);
    return Error(key, absl::StrCat("must be ", expected, "; got ", Describe(**v),
                                   suggestion.empty() ? "" : " (did you mean `",
                                   suggestion, suggestion.empty() ? "" : "`?)"));
  }
  *out = (*v)->scalar;
  return absl::OkStatus();
}

absl::Status MapReader::Duration(const std::string& key, absl::Duration min_exclusive,
                                 absl::Duration* out) const {
  absl::StatusOr<const YamlNode*> v = Scalar(key, "a duration such as 500ms, 3s, 2m, 1h");
  if (!v.ok() || *v == nullptr) return v.status();
  absl::StatusOr<absl::Duration> d = ParseDuration((*v)->scalar);
  if (!d.ok()) return Error(key, absl::StrCat("is not a valid duration: ", d.status().message()));
  if (*d <= min_exclusive) {
    return Error(key, absl::StrCat("must be greater than ", FormatDurationForConfig(min_exclusive),
                                   "; got ", (*v)->scalar));
  }
  *out = *d;
  return absl::OkStatus();
}

absl::Status MapReader::Size(const std::string& key, int64_t min, int64_t max,
                             int64_t* out) const {
  absl::StatusOr<const YamlNode*> v = Scalar(key, "a size such as 1048576, 512KiB, 64MiB");
  if (!v.ok() || *v == nullptr) return v.status();
  absl::StatusOr<int64_t> bytes = ParseSize((*v)->scalar);
  if (!bytes.ok()) return Error(key, absl::StrCat("is not a valid size: ", bytes.status().message()));
  if (*bytes < min || *bytes > max) {
    return Error(key, absl::StrCat("must be between ", min, " and ", max, " bytes; got ",
                                   (*v)->scalar, " (", *bytes, " bytes)"));
  }
  *out = *bytes;
  return absl::OkStatus();
}

absl::Status MapReader::IntList(const std::string& key, int64_t min, int64_t max,
                                size_t min_items, std::vector<int64_t>* out) const {
  absl::StatusOr<const YamlNode*> list = Sequence(key);
  if (!list.ok() || *list == nullptr) return list.status();
  const std::string expected = DescribeIntRange(min, max);
  if ((*list)->items.size() < min_items) {
    return Error(key, absl::StrCat("needs at least ", min_items,
                                   min_items == 1 ? " entry" : " entries", "; got ",
                                   (*list)->items.size()));
  }
  std::vector<int64_t> values;
  for (size_t i = 0; i < (*list)->items.size(); ++i) {
    const YamlNode& item = (*list)->items[i];
    int64_t value = 0;
    if (!item.IsScalar() || !item.plain || !IsBareInteger(item.scalar) ||
        !absl::SimpleAtoi(item.scalar, &value) || value < min || value > max) {
      return ErrorAt(item.where, absl::StrCat("`", Path(key), "[", i, "]` must be ", expected,
                                              "; got ", Describe(item)));
    }
    values.push_back(value);
  }
  *out = std::move(values);
  return absl::OkStatus();
}

absl::StatusOr<const YamlNode*> MapReader::Map(const std::string& key) const {
  const YamlNode* v = node_->Find(key);
  if (v == nullptr) return nullptr;
  if (!v->IsMap()) {
    return Error(key, v->IsNull() ? "has no value; expected a map (write {} for defaults)"
                                  : absl::StrCat("must be a map; got ", Describe(*v)));
  }
  return v;
}

absl::StatusOr<const YamlNode*> MapReader::Sequence(const std::string& key) const {
  const YamlNode* v = node_->Find(key);
  if (v == nullptr) return nullptr;
  if (!v->IsSequence()) {
    return Error(key, v->IsNull() ? "has no value; expected a list"
                                  : absl::StrCat("must be a list; got ", Describe(*v)));
  }
  return v;
}

}  // namespace cairn::config_internal
