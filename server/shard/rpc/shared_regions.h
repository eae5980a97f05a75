// The server's side of the same-host path (docs/shared-memory.md): the
// shared regions workers on this host offered (common/shared_region.h), and
// where in them a push's values are and a pull's answer may go. The shard
// applies a push straight from the region and writes a pull's answer
// straight into it (Shard::Push's `values`, Shard::ReplyArea).
//
// Regions belong to the server process, not to one registration: a server
// registered again keeps them, and a restarted server knows none (a worker
// then gets UNAVAILABLE, refreshes its map, learns the server's new
// incarnation and opens a new channel, which offers a new region).
#ifndef CAIRN_SERVER_SHARD_RPC_SHARED_REGIONS_H_
#define CAIRN_SERVER_SHARD_RPC_SHARED_REGIONS_H_

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.pb.h"
#include "common/shared_region.h"
#include "common/value_pieces.h"

namespace cairn {

// Thread-safe.
class SharedRegions {
 public:
  SharedRegions();

  // Maps the region `offer` names and returns its id. An offer from another
  // incarnation of the worker id drops the earlier incarnation's regions
  // (requests in flight keep theirs until they end). One incarnation may
  // hold several (a channel opened again: each offers its own); beyond
  // kMaxRegionsPerWorker the oldest goes.
  // FAILED_PRECONDITION (SharedRegion::Open's reasons) when it cannot be
  // mapped here.
  absl::StatusOr<uint64_t> Open(const v1::OpenRegionRequest& offer) ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kMaxRegionsPerWorker = 4;

  // True when a table of `request` carries its values in a region.
  static bool UsesRegion(const v1::PushRequest& request);

  // Where each table's values of `request` are: its range of the worker's
  // region (one piece), or its inline `values`: received[i] when given (the
  // pieces gRPC received them in, ReceivedTables), else the message's own.
  // The pieces stay valid while `region` (null when no table used one) and
  // what `received` points into are held. UNAVAILABLE when the region is
  // unknown here (this server restarted since it was offered);
  // INVALID_ARGUMENT naming the table when a range lies outside the region
  // or the region is another worker's, or naming what is wrong with a
  // streamed push's `written` (every table's values one run in its region,
  // the count 8 aligned bytes of it outside the run).
  struct PushValues {
    std::shared_ptr<SharedRegion> region;
    std::vector<ValuePieces> values;  // one per table, in order
    // A streamed push's count of bytes written (PushRequest.written), and
    // the run of values it counts: every table's, one after the other.
    const std::atomic<uint64_t>* written = nullptr;
    const char* begin = nullptr;
    const char* end = nullptr;
  };
  absl::StatusOr<PushValues> ResolvePush(const v1::PushRequest& request,
                                         absl::Span<const ValuePieces> received = {}) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // The bytes of a pull's `reply_to`, held while `region` is; nullopt when
  // the request has none or names a range this server cannot resolve (the
  // answer then goes inline: the worker reads either).
  struct Reply {
    std::shared_ptr<SharedRegion> region;
    absl::Span<char> bytes;
  };
  std::optional<Reply> ResolveReply(const v1::PullRequest& request) const
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  // The region `id` names, if it is `worker_id`'s: UNAVAILABLE when it is
  // unknown here, INVALID_ARGUMENT when it is another worker's.
  absl::StatusOr<std::shared_ptr<SharedRegion>> Find(uint64_t id, uint32_t worker_id) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Held {
    std::shared_ptr<SharedRegion> region;
    uint32_t worker_id = 0;
  };
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Held> regions_ ABSL_GUARDED_BY(mu_);           // id -> region
  struct WorkerRegions {
    uint64_t incarnation = 0;
    std::vector<uint64_t> ids;  // oldest first
  };
  std::map<uint32_t, WorkerRegions> by_worker_ ABSL_GUARDED_BY(mu_);

  // Fills `out`'s stream (written, begin, end) from request.written.
  static absl::Status ResolveWritten(const v1::PushRequest& request, PushValues* out);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_SHARED_REGIONS_H_
