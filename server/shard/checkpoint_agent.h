// Writes a server's checkpoint snapshots to its store and reports each to the
// coordinator, on one background thread, so closing an iteration only pays
// for the in-memory copy (Shard::SetCheckpointSink).
//
// Per snapshot: CheckpointWriter::Write (one synced WriteBatch with its
// manifest; see checkpoint_writer.h for why that is crash-safe), then
// Coordinator.ReportCheckpoint with each partition's checksum; the answer
// names the checkpoints of this store still referenced by complete ones, and
// the rest (older than the newest referenced) are deleted. A checkpoint the
// coordinator never completes is never restored.
#ifndef CAIRN_SERVER_SHARD_CHECKPOINT_AGENT_H_
#define CAIRN_SERVER_SHARD_CHECKPOINT_AGENT_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/work_queue.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/shard.h"

namespace cairn {

class CoordinatorClient;
class ShardMetrics;
namespace checkpoint {
class CheckpointWriter;
}

// Thread-safe.
class CheckpointAgent {
 public:
  struct Options {
    std::string store_dir;  // this server's store (checkpoint::ServerStoreDir)
    uint32_t server_id = 0;
    uint32_t num_partitions = 0;
    std::vector<checkpoint::TableShape> tables;
    size_t max_queued = 2;  // snapshots waiting beyond this are dropped
  };

  // Opens the store and starts the writer thread. `coordinator` and
  // `metrics` (may be null) must outlive the agent. Errors from
  // CheckpointWriter::Open: FailedPrecondition when another live process
  // holds the store, DataLoss, Unavailable; each names the directory.
  static absl::StatusOr<std::unique_ptr<CheckpointAgent>> Start(Options options,
                                                                CoordinatorClient* coordinator,
                                                                ShardMetrics* metrics);
  ~CheckpointAgent();

  // Queues `snapshot` for writing; never blocks (it runs under the shard
  // lock). Drops it, logged and counted, when max_queued are waiting.
  void Submit(ShardSnapshot snapshot);

  // Writes what is queued, then stops the thread. Idempotent.
  void Stop();

 private:
  CheckpointAgent(Options options, std::unique_ptr<checkpoint::CheckpointWriter> writer,
                  CoordinatorClient* coordinator, ShardMetrics* metrics);
  void Run();
  // Writes one snapshot and reports it.
  absl::Status WriteAndReport(ShardSnapshot snapshot);

  const Options options_;
  const std::unique_ptr<checkpoint::CheckpointWriter> writer_;
  CoordinatorClient* const coordinator_;
  ShardMetrics* const metrics_;

  WorkQueue<ShardSnapshot> queue_;  // closed by Stop
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_CHECKPOINT_AGENT_H_
