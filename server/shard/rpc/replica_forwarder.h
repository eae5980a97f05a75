// Primary-backup replication of pushes (DESIGN.md, Failure and recovery):
// the primary of a replica group sends each push it accepted to every backup
// of the group and acknowledges the worker only once all of them applied it
// (or buffered it for its BSP iteration). A backup that is down makes the
// push fail with UNAVAILABLE; the worker retries with the same (worker,
// group, sequence), so the retry is applied once everywhere, and once the
// coordinator has removed the dead backup (or promoted it away) the push
// goes through. Forwarded copies carry the primary's map version: a replica
// that installed a newer assignment refuses them, so a deposed primary can
// never collect the acknowledgements it needs.
#ifndef CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_
#define CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "server/shard/shard.h"

namespace cairn {

// Thread-safe.
class ReplicaForwarder {
 public:
  // `max_message_bytes`: the channels' send/receive limit; `timeout`: each
  // forwarded call's deadline; `dead_after`: the channels' keepalive
  // (MakeChannel), so a backup cut off fails its forwards within about a lease.
  ReplicaForwarder(int64_t max_message_bytes, absl::Duration timeout, absl::Duration dead_after);

  // Sends a copy of `request` (marked forwarded, stamped `map_version`) to
  // every replica in `to`, in parallel; calls `done` once with OK when all
  // acknowledged, or with the first error (Unavailable naming the backup),
  // on a gRPC thread. `request` must stay valid until `done` runs.
  void Forward(const v1::PushRequest& request, uint64_t map_version,
               const std::vector<Shard::Replica>& to, std::function<void(absl::Status)> done)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  v1::ParameterService::Stub* StubFor(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  const int64_t max_message_bytes_;
  const absl::Duration timeout_;
  const absl::Duration dead_after_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<v1::ParameterService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_REPLICA_FORWARDER_H_
