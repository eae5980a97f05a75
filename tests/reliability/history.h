// Per-worker operation histories, Jepsen/etcd style: each worker appends one
// JSON object per line to its own file, and the checker loads a folder of
// them. An operation is one push of one step to one table.
//
// Line format (JSONL, one object per line, keys in this order):
//   {"worker":1,"step":7,"seq":15,"table":"dense","keys":10,
//    "delta_checksum":"9f0c...","outcome":"ok","t_invoke_ms":1700000000123,
//    "t_complete_ms":1700000000130,"error":""}
//   worker:         the worker id the coordinator gave.
//   step:           the clock the push belongs to.
//   seq:            the operation's number in this file, from 0, unique per file.
//   table, keys:    the table and how many keys (sparse rows, dense chunks) it touched.
//   delta_checksum: DeltaChecksum (workload.h) of the pushed keys and values.
//   outcome:        ok (acknowledged), fail (certainly not applied),
//                   info (unknown: may or may not have been applied).
//   t_invoke_ms, t_complete_ms: Unix wall time in ms; t_complete_ms is -1
//                   while the operation has not completed.
//   error:          the failed push's status, "" otherwise.
//
// Each operation is written twice: an invocation line (outcome "info",
// t_complete_ms -1) before the push is sent, and a completion line with the
// same seq once it returns. A worker killed in between leaves only the
// invocation, which then reads as "info" -- the push may have been applied.
// Readers fold the lines of one operation: the last line of a seq wins.
#ifndef CAIRN_TESTS_RELIABILITY_HISTORY_H_
#define CAIRN_TESTS_RELIABILITY_HISTORY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cairn::reliability {

enum class Outcome { kOk, kFail, kInfo };

// "ok", "fail", "info".
absl::string_view OutcomeName(Outcome outcome);

// One operation, as written to and read from a history file.
struct HistoryRecord {
  int worker = -1;
  int64_t step = 0;
  int64_t seq = 0;
  std::string table;
  int64_t keys = 0;
  std::string delta_checksum;
  Outcome outcome = Outcome::kInfo;
  int64_t t_invoke_ms = 0;
  int64_t t_complete_ms = -1;
  std::string error;
};

// One JSON object, no trailing newline.
std::string ToJsonLine(const HistoryRecord& record);

// Parses one line. InvalidArgument saying which field is missing or wrong.
absl::StatusOr<HistoryRecord> ParseJsonLine(absl::string_view line);

// Appends a worker's operations to its history file. Each line goes out in
// one write(2) on an O_APPEND descriptor, so a process killed at any point
// leaves whole lines only (no fsync: the tests kill processes, not machines).
// Not thread-safe; confined to the worker's training thread.
class HistoryWriter {
 public:
  // Opens `path` for appending (creating it). When the file already holds
  // operations (a restarted worker), seq continues after the highest one.
  // Errors: Internal naming the path when it cannot be opened;
  // InvalidArgument (file:line) when the existing file does not parse.
  static absl::StatusOr<std::unique_ptr<HistoryWriter>> Open(const std::string& path);
  ~HistoryWriter();

  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Writes the invocation line of a new operation (outcome info, invoke time
  // now) and returns its seq. `record`'s seq, outcome and times are ignored.
  absl::StatusOr<int64_t> Invoke(const HistoryRecord& record);

  // Writes the completion line of operation `seq` (complete time now).
  // `error` is "" for kOk. InvalidArgument for a seq never invoked or
  // already completed.
  absl::Status Complete(int64_t seq, Outcome outcome, absl::string_view error = "");

  const std::string& path() const { return path_; }

 private:
  HistoryWriter(std::string path, int fd, int64_t next_seq)
      : path_(std::move(path)), fd_(fd), next_seq_(next_seq) {}
  absl::Status WriteLine(const HistoryRecord& record);

  const std::string path_;
  const int fd_;
  int64_t next_seq_;
  std::vector<HistoryRecord> pending_;  // invoked, not completed
};

// Reads one history file, folding each operation's lines (the last line of
// a seq wins); records in order of seq. Errors: NotFound (no file),
// InvalidArgument naming file:line for a line that does not parse.
absl::StatusOr<std::vector<HistoryRecord>> ReadHistoryFile(const std::string& path);

// Reads every "*.jsonl" file directly in `dir` (ReadHistoryFile each), files
// in name order. Errors: NotFound (no such folder), those of ReadHistoryFile.
absl::StatusOr<std::vector<HistoryRecord>> ReadHistoryDir(const std::string& dir);

}  // namespace cairn::reliability

#endif  // CAIRN_TESTS_RELIABILITY_HISTORY_H_
