// A thin client of the Coordinator service shared by cairn-server, the worker
// client library and cairnctl: deadlines on every call, and registration that
// retries an unreachable coordinator with backoff until a deadline.
#ifndef CAIRN_COMMON_COORDINATOR_CLIENT_H_
#define CAIRN_COMMON_COORDINATOR_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.grpc.pb.h"
#include "common/coordinator_channel.h"

namespace cairn {

class CompletionLoop;

// Thread-safe (gRPC stubs are).
class CoordinatorClient final : public CoordinatorChannel {
 public:
  // How WatchPartitionMap waits for its answer.
  enum class WatchWait {
    // Through gRPC's callback API, the caller blocked on a notification
    // (cairn-server: its process runs gRPC's callback threads anyway, and
    // its watch is nearly always in flight).
    kCallbackThreads,
    // A synchronous call, the caller's thread polling while it waits (the
    // worker client, whose watch is only the start-up barrier's): the
    // process then starts no callback threads (worker/client/call_queue.h).
    kCallingThread,
    // On a CompletionLoop (common/completion_loop.h), the caller blocked on
    // a notification (cairn-server: its loop's thread is then the only one
    // polling gRPC while the watch is in flight).
    kCompletionLoop,
  };

  // `dead_after` > 0: the channel's keepalive (MakeChannel), so a connection
  // cut silently is replaced within about `dead_after`; the members pass
  // the lease timeout.
  CoordinatorClient(const std::string& address, int64_t max_message_bytes,
                    absl::Duration dead_after = absl::ZeroDuration(),
                    WatchWait watch_wait = WatchWait::kCallbackThreads);
  // (kCompletionLoop given here, with no loop, waits as kCallingThread.)
  // WatchWait::kCompletionLoop on `watch_loop`, which must outlive the
  // client and run until the last watch returned.
  CoordinatorClient(const std::string& address, int64_t max_message_bytes,
                    absl::Duration dead_after, CompletionLoop* watch_loop);

  const std::string& address() const override { return address_; }

  // Retry UNAVAILABLE with backoff (100 ms doubling to 2 s) until `deadline`;
  // then Unavailable naming the coordinator's address.
  absl::StatusOr<v1::RegisterServerResponse> RegisterServer(
      const v1::RegisterServerRequest& request, absl::Time deadline);
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request, absl::Time deadline) override;

  // Single attempts with `timeout`.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                  absl::Duration timeout) override;
  absl::StatusOr<v1::GetPartitionMapResponse> GetPartitionMap(absl::Duration timeout) override;
  // Long poll: returns when the map version exceeds `known_version` or after `wait`.
  // With WatchWait::kCallbackThreads its answer comes on one of gRPC's
  // callback threads (the caller's thread polls nothing while it waits):
  // never call it on one of those; with kCompletionLoop, never on the
  // loop's thread.
  absl::StatusOr<v1::GetPartitionMapResponse> WatchPartitionMap(uint64_t known_version,
                                                                absl::Duration wait) override;
  absl::Status Leave(const v1::LeaveRequest& request, absl::Duration timeout) override;
  absl::StatusOr<v1::ListMembersResponse> ListMembers(absl::Duration timeout);
  // A server wrote its part of a checkpoint (its checkpoint agent).
  absl::StatusOr<v1::ReportCheckpointResponse> ReportCheckpoint(
      const v1::ReportCheckpointRequest& request, absl::Duration timeout);
  // Takes a checkpoint now and waits for it to complete (cairnctl checkpoint).
  absl::StatusOr<v1::CheckpointResponse> Checkpoint(const v1::CheckpointRequest& request,
                                                    absl::Duration timeout);
  absl::StatusOr<v1::ListCheckpointsResponse> ListCheckpoints(absl::Duration timeout);
  // A joining server caught up with a replica group (server/shard/replica_transfers.h).
  absl::StatusOr<v1::ReplicaReadyResponse> ReplicaReady(const v1::ReplicaReadyRequest& request,
                                                        absl::Duration timeout);

 private:
  const std::string address_;
  const WatchWait watch_wait_;
  CompletionLoop* const watch_loop_ = nullptr;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_COORDINATOR_CLIENT_H_
