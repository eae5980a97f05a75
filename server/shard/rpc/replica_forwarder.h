// Primary-backup replication of pushes (docs/design.md, Failure and recovery):
// the primary of a replica group sends each push it accepted to every backup
// of the group and acknowledges the worker only once all of them applied it
// (or buffered it for its BSP iteration). A backup that is down makes the
// push fail with UNAVAILABLE; the worker retries with the same (worker,
// group, sequence), so the retry is applied once everywhere, and once the
// coordinator has removed the dead backup (or promoted it away) the push
// goes through. Forwarded copies carry the primary's map version: a replica
// that installed a newer assignment refuses them, so a deposed primary can
// never collect the acknowledgements it needs. The copies' values are sent
// from where the primary applied them (a worker's shared region, or the
// request as received), with no copy of them in user space.
#ifndef CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_
#define CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_

#include <grpcpp/generic/generic_stub.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"
#include "common/completion_loop.h"
#include "common/push_payload.h"
#include "common/value_pieces.h"
#include "server/shard/shard.h"

namespace cairn {

// Thread-safe.
class ReplicaForwarder {
 public:
  // `loop`: where the forwarded calls complete (the server's own, so that
  // no other thread polls gRPC); it must outlive the forwarder.
  // `max_message_bytes`: the channels' send/receive limit; `timeout`: each
  // forwarded call's deadline; `dead_after`: the channels' keepalive
  // (MakeChannel), so a backup cut off fails its forwards within about a lease.
  ReplicaForwarder(CompletionLoop* loop, int64_t max_message_bytes, absl::Duration timeout,
                   absl::Duration dead_after);

  // The copy of `request` a backup gets: marked forwarded, stamped
  // `map_version`, without the worker's tick (a tick is for the server it was
  // sent to), each table's values as one range of values[i] (its bytes in
  // the worker's shared region, or the pieces gRPC received them in;
  // `values` empty: the request's own `values`) and no `shared` range. The
  // ranges point at that memory: nothing is copied.
  static std::shared_ptr<const PushPayload> Copy(const v1::PushRequest& request,
                                                 absl::Span<const ValuePieces> values,
                                                 uint64_t map_version);

  // Sends `copy` (from Copy()) to every replica in `to`, in parallel, its
  // values as slices of the memory it points at (common/push_payload.h);
  // calls `done` once with OK when all acknowledged, or with the first error
  // (Unavailable naming the backup), on the loop's thread. `done` runs only
  // once gRPC let go of every slice of that memory, which must stay valid
  // until then; `owner` is held until then too.
  void Forward(std::shared_ptr<const PushPayload> copy, std::shared_ptr<const void> owner,
               const std::vector<Shard::Replica>& to, std::function<void(absl::Status)> done)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  grpc::GenericStub* StubFor(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  CompletionLoop* const loop_;
  const int64_t max_message_bytes_;
  const absl::Duration timeout_;
  const absl::Duration dead_after_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<grpc::GenericStub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_
