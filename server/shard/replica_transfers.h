// A server's side of replica groups changing members: sends a group's state
// to each server joining it (this server is the group's primary), and tells
// the coordinator when this server finished receiving a group it joins.
// One background thread; the shard and the gRPC service only queue work.
//
// A transfer is Shard::ExportGroup (one consistent copy, after which the
// group's pushes are forwarded to the joiner too) sent as ReplicaChunk calls,
// one per partition, then the end. A failed send drops the joiner from the
// forward list (not when the end itself failed: the joiner may hold the copy)
// and tries again after a second while the map still lists it; a joiner that
// answers it holds the group already ends the transfer.
#ifndef CAIRN_SERVER_SHARD_REPLICA_TRANSFERS_H_
#define CAIRN_SERVER_SHARD_REPLICA_TRANSFERS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/work_queue.h"

namespace cairn {

class CoordinatorClient;
class Shard;

// Thread-safe.
class ReplicaTransfers {
 public:
  // `shard` and `coordinator` must outlive this. `timeout`: each call's
  // deadline; `dead_after`: the channels' keepalive (MakeChannel).
  ReplicaTransfers(uint32_t server_id, Shard* shard, CoordinatorClient* coordinator,
                   int64_t max_message_bytes, absl::Duration timeout, absl::Duration dead_after);
  ~ReplicaTransfers();  // Stop()

  // Queue: send group `group`'s state to `joiner` (Shard's JoinerSink).
  void SendTo(uint32_t group, uint32_t joiner);
  // Queue: tell the coordinator this server holds group `group` now.
  void ReportReady(uint32_t group);
  void Stop();

 private:
  struct Task {
    bool send = false;  // else: report ready
    uint32_t group = 0;
    uint32_t joiner = 0;
    absl::Time not_before;
    int attempts = 0;  // made so far
  };
  void Run();
  // Sends one copy. `*maybe_installed` is set when the end chunk failed: the
  // joiner may have installed it.
  absl::Status Send(uint32_t group, uint32_t joiner, bool* maybe_installed);
  absl::Status Report(uint32_t group);

  const uint32_t server_id_;
  Shard* const shard_;
  CoordinatorClient* const coordinator_;
  const int64_t max_message_bytes_;
  const absl::Duration timeout_;
  const absl::Duration dead_after_;

  WorkQueue<Task> tasks_;  // closed by Stop
  std::map<std::string, std::unique_ptr<v1::ParameterService::Stub>> stubs_;  // worker thread only
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_REPLICA_TRANSFERS_H_
