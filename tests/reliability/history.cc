#include "tests/reliability/history.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cairn::reliability {
namespace {

using nlohmann::ordered_json;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

absl::StatusOr<Outcome> ParseOutcome(const std::string& name) {
  if (name == "ok") return Outcome::kOk;
  if (name == "fail") return Outcome::kFail;
  if (name == "info") return Outcome::kInfo;
  return absl::InvalidArgumentError(absl::StrCat("outcome \"", name, "\" is not ok, fail or info"));
}

// Reads the lines of `path` into records folded by seq.
absl::StatusOr<std::map<int64_t, HistoryRecord>> ReadFolded(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("history ", path, ": cannot open"));
  std::map<int64_t, HistoryRecord> by_seq;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    absl::StatusOr<HistoryRecord> record = ParseJsonLine(line);
    if (!record.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("history ", path, ":", line_number, ": ", record.status().message()));
    }
    by_seq[record->seq] = *std::move(record);
  }
  return by_seq;
}

}  // namespace

absl::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFail:
      return "fail";
    case Outcome::kInfo:
      return "info";
  }
  return "info";
}

std::string ToJsonLine(const HistoryRecord& r) {
  ordered_json j;
  j["worker"] = r.worker;
  j["step"] = r.step;
  j["seq"] = r.seq;
  j["table"] = r.table;
  j["keys"] = r.keys;
  j["delta_checksum"] = r.delta_checksum;
  j["outcome"] = std::string(OutcomeName(r.outcome));
  j["t_invoke_ms"] = r.t_invoke_ms;
  j["t_complete_ms"] = r.t_complete_ms;
  j["error"] = r.error;
  return j.dump();
}

absl::StatusOr<HistoryRecord> ParseJsonLine(absl::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  HistoryRecord r;
  auto integer = [&j](const char* key, auto* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field \"", key, "\" missing or not an integer"));
    }
    *out = it->get<std::remove_pointer_t<decltype(out)>>();
    return absl::OkStatus();
  };
  auto text = [&j](const char* key, std::string* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field \"", key, "\" missing or not a string"));
    }
    *out = it->get<std::string>();
    return absl::OkStatus();
  };
  std::string outcome;
  for (absl::Status s : {integer("worker", &r.worker), integer("step", &r.step),
                         integer("seq", &r.seq), text("table", &r.table), integer("keys", &r.keys),
                         text("delta_checksum", &r.delta_checksum), text("outcome", &outcome),
                         integer("t_invoke_ms", &r.t_invoke_ms),
                         integer("t_complete_ms", &r.t_complete_ms), text("error", &r.error)}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<Outcome> parsed = ParseOutcome(outcome);
  if (!parsed.ok()) return parsed.status();
  r.outcome = *parsed;
  return r;
}

absl::StatusOr<std::unique_ptr<HistoryWriter>> HistoryWriter::Open(const std::string& path) {
  int64_t next_seq = 0;
  if (std::filesystem::exists(path)) {
    absl::StatusOr<std::map<int64_t, HistoryRecord>> existing = ReadFolded(path);
    if (!existing.ok()) return existing.status();
    if (!existing->empty()) next_seq = existing->rbegin()->first + 1;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("history ", path, ": open: ", std::strerror(errno)));
  }
  return std::unique_ptr<HistoryWriter>(new HistoryWriter(path, fd, next_seq));
}

HistoryWriter::~HistoryWriter() { ::close(fd_); }

absl::Status HistoryWriter::WriteLine(const HistoryRecord& record) {
  const std::string line = ToJsonLine(record) + "\n";
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return absl::InternalError(
        absl::StrCat("history ", path_, ": write: ", n < 0 ? std::strerror(errno) : "short write"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> HistoryWriter::Invoke(const HistoryRecord& record) {
  HistoryRecord r = record;
  r.seq = next_seq_;
  r.outcome = Outcome::kInfo;
  r.t_invoke_ms = NowMs();
  r.t_complete_ms = -1;
  r.error.clear();
  absl::Status written = WriteLine(r);
  if (!written.ok()) return written;
  ++next_seq_;
  pending_.push_back(std::move(r));
  return pending_.back().seq;
}

absl::Status HistoryWriter::Complete(int64_t seq, Outcome outcome, absl::string_view error) {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [seq](const HistoryRecord& r) { return r.seq == seq; });
  if (it == pending_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("history ", path_, ": seq ", seq, " was not invoked or is already complete"));
  }
  HistoryRecord r = std::move(*it);
  pending_.erase(it);
  r.outcome = outcome;
  r.t_complete_ms = NowMs();
  r.error = std::string(error);
  return WriteLine(r);
}

absl::StatusOr<std::vector<HistoryRecord>> ReadHistoryFile(const std::string& path) {
  absl::StatusOr<std::map<int64_t, HistoryRecord>> by_seq = ReadFolded(path);
  if (!by_seq.ok()) return by_seq.status();
  std::vector<HistoryRecord> records;
  records.reserve(by_seq->size());
  for (auto& [seq, record] : *by_seq) records.push_back(std::move(record));
  return records;
}

absl::StatusOr<std::vector<HistoryRecord>> ReadHistoryDir(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".jsonl") {
      files.push_back(entry.path().string());
    }
  }
  if (error) {
    return absl::NotFoundError(absl::StrCat("history folder ", dir, ": ", error.message()));
  }
  std::sort(files.begin(), files.end());
  std::vector<HistoryRecord> records;
  for (const std::string& file : files) {
    absl::StatusOr<std::vector<HistoryRecord>> one = ReadHistoryFile(file);
    if (!one.ok()) return one.status();
    records.insert(records.end(), one->begin(), one->end());
  }
  return records;
}

}  // namespace cairn::reliability
