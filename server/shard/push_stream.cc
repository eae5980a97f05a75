#include "server/shard/push_stream.h"

#include "absl/strings/str_cat.h"

namespace cairn {

absl::Status PushStream::Await(const char* from) const {
  const uint64_t need = static_cast<uint64_t>(end_ - from);
  uint64_t seen = written_->load(std::memory_order_acquire);
  if (seen >= need) return absl::OkStatus();
  absl::Time moved = absl::Now();
  for (uint32_t spins = 1;; ++spins) {
    const uint64_t now_written = written_->load(std::memory_order_acquire);
    if (now_written >= need) return absl::OkStatus();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (spins % 1024 != 0) continue;
    const absl::Time now = absl::Now();
    if (now_written != seen) {
      seen = now_written;
      moved = now;
    }
    if (now >= deadline_ || now - moved >= kMaxStall) {
      return absl::DeadlineExceededError(absl::StrCat(
          "streamed push: ", seen, " of ", end_ - begin_,
          " value bytes written (from the end) when ",
          now >= deadline_ ? "the deadline passed"
                           : absl::StrCat("the count stood still for ",
                                          absl::FormatDuration(kMaxStall))));
    }
  }
}

}  // namespace cairn
