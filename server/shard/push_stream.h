// The values of a streamed push (PushRequest.written) as its worker writes
// them: a count, in the worker's shared region, of the bytes of the push's
// one run of values written so far, counted back from the run's end (all
// ones once all are). Backward propagation produces a model's gradients
// last layer first, so the worker posts the push once all but the first
// layer's weight gradient, its largest and the start of the run, are
// written, and writes that one in blocks of rows from its last row to its
// first; the server applies the tables from the last, each chunk once the
// count passes it, so that the update overlaps the rest of the backward
// pass and only the last block written is left to apply when it ends
// (docs/shared-memory.md, "A push sent while it is written").
//
// Thread-compatible: one serving thread reads it.
#ifndef CAIRN_SERVER_SHARD_PUSH_STREAM_H_
#define CAIRN_SERVER_SHARD_PUSH_STREAM_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace cairn {

class PushStream {
 public:
  // The count stored once every byte is written.
  static constexpr uint64_t kAllWritten = ~uint64_t{0};
  // How long the count may stand still before the push is given up: a
  // worker writes a block of rows in milliseconds; one that stopped (killed,
  // or paused by a debugger) must not hold the serving thread, and the
  // shard's lock, for the call's whole deadline.
  static constexpr absl::Duration kMaxStall = absl::Seconds(1);

  // `written`: the count (8-byte aligned, in memory the worker shares);
  // [`begin`, `end`): the run of values it counts back from `end`;
  // `deadline` (absl::Now's clock): the call's.
  PushStream(const std::atomic<uint64_t>* written, const char* begin, const char* end,
             absl::Time deadline)
      : written_(written), begin_(begin), end_(end), deadline_(deadline) {}

  // Returns once the bytes [from, end) are written (at once when they
  // are), polling the count without sleeping. `from` in [begin, end].
  // Errors: DeadlineExceeded when the deadline passes, or the count stands
  // still for kMaxStall, first (the push is then refused whole; the worker
  // resends it, once written, as any push that timed out).
  absl::Status Await(const char* from) const;
  // Await(begin): the whole run.
  absl::Status AwaitAll() const { return Await(begin_); }

  const char* begin() const { return begin_; }
  const char* end() const { return end_; }

 private:
  const std::atomic<uint64_t>* written_;
  const char* begin_;
  const char* end_;
  absl::Time deadline_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_PUSH_STREAM_H_
