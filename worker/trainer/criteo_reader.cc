#include "worker/trainer/criteo_reader.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cairn {
namespace {

constexpr int kFields = 1 + kCriteoIntegerFeatures + kCriteoCategoricalFeatures;

// "I3", "C12": a feature's name as Criteo's documentation numbers them.
std::string FieldName(int field) {
  if (field == 0) return "label";
  if (field <= kCriteoIntegerFeatures) return absl::StrCat("I", field);
  return absl::StrCat("C", field - kCriteoIntegerFeatures);
}

// The text of a bad value, cut to a readable length.
std::string Shown(absl::string_view text) {
  if (text.size() > 40) return absl::StrCat("\"", text.substr(0, 40), "...\"");
  return absl::StrCat("\"", text, "\"");
}

class LineParser {
 public:
  LineParser(const std::string& path, CriteoData* out) : path_(path), out_(out) {}

  // Parses one line (without its newline) numbered `line`.
  absl::Status Parse(absl::string_view text, int64_t line) {
    absl::string_view fields[kFields];
    int count = 0;
    size_t start = 0;
    while (true) {
      const size_t tab = text.find('\t', start);
      if (count < kFields) fields[count] = text.substr(start, tab == absl::string_view::npos
                                                                  ? absl::string_view::npos
                                                                  : tab - start);
      ++count;
      if (tab == absl::string_view::npos) break;
      start = tab + 1;
    }
    if (count != kFields) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ":", line, ": ", count, " tab-separated fields, expected ", kFields,
                       " (label, ", kCriteoIntegerFeatures, " integers, ",
                       kCriteoCategoricalFeatures, " categorical ids)"));
    }
    if (fields[0] != "0" && fields[0] != "1") {
      return Bad(line, 0, fields[0], "is not a label (0 or 1)");
    }
    out_->labels.push_back(fields[0] == "1" ? 1.0f : 0.0f);
    for (int j = 1; j <= kCriteoIntegerFeatures; ++j) {
      const absl::string_view f = fields[j];
      int64_t v = 0;
      if (!f.empty()) {
        const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
        if (ec != std::errc() || end != f.data() + f.size()) {
          return Bad(line, j, f, ec == std::errc::result_out_of_range
                                     ? "is out of the 64-bit integer range"
                                     : "is not an integer");
        }
      }
      out_->integers.push_back(v);
      out_->integer_present.push_back(f.empty() ? 0 : 1);
    }
    for (int j = kCriteoIntegerFeatures + 1; j < kFields; ++j) {
      const absl::string_view f = fields[j];
      uint64_t id = kCriteoMissingId;
      if (!f.empty()) {
        const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), id, 16);
        if (ec != std::errc() || end != f.data() + f.size()) {
          return Bad(line, j, f, "is not a hexadecimal id");
        }
        if (f.size() > 16 || id == kCriteoMissingId) {
          return Bad(line, j, f, "is out of range (at most 16 hexadecimal digits, not all f)");
        }
      }
      out_->ids.push_back(id);
    }
    ++out_->size;
    return absl::OkStatus();
  }

 private:
  absl::Status Bad(int64_t line, int field, absl::string_view text, const char* what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ":", line, ": field ", field + 1, " (",
                                                   FieldName(field), ") ", Shown(text), " ",
                                                   what));
  }

  const std::string& path_;
  CriteoData* const out_;
};

}  // namespace

absl::StatusOr<CriteoData> ReadCriteo(const std::string& path, int64_t max_examples) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  CriteoData data;
  LineParser parser(path, &data);
  std::string line;
  int64_t number = 0;
  while ((max_examples <= 0 || data.size < max_examples) && std::getline(in, line)) {
    ++number;
    const bool complete = !in.eof();  // getline stopped at a newline
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() && !complete) break;  // the file ends with a newline
    absl::Status s = parser.Parse(line, number);
    if (!s.ok() && !complete) {
      return absl::DataLossError(absl::StrCat(
          s.message(), "; it is the last line and has no newline: the file looks truncated"));
    }
    if (!s.ok()) return s;
  }
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat(path, ": read error after line ", number, " (",
                                            std::strerror(errno), ")"));
  }
  return data;
}

}  // namespace cairn
