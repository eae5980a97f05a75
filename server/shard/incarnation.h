// One registration of cairn-server with the coordinator: the shard it serves
// under the id it was given, its checkpoint agent, its replica-group
// transfers, and the threads that renew its lease, follow the partition map
// and expire waiting pulls.
//
// An incarnation ends when the process is told to stop, when the
// coordinator is gone for too long, or when the coordinator declared this
// server dead (its lease ran out: a network cut, a stall). A server declared
// dead may have been replaced as primary by a backup, so whatever it holds
// can be stale: the incarnation drops all of it, and cairn-server registers
// again, under a new server id, as a new, empty incarnation that the
// coordinator gives replica groups to back up (docs/design.md, Failure and
// recovery; docs/failover.md, Rejoin).
//
// Stop() is called from one thread; the rest is internal.
#ifndef CAIRN_SERVER_SHARD_INCARNATION_H_
#define CAIRN_SERVER_SHARD_INCARNATION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/coordinator.pb.h"
#include "server/shard/cold_rows.h"
#include "server/shard/rpc/parameter_service.h"

namespace cairn {

class CheckpointAgent;
class CheckpointPartitionReader;
class CoordinatorClient;
class ReplicaTransfers;
class Shard;
class ShardMetrics;
struct JobConfig;

// How an incarnation ended.
enum class IncarnationEnd {
  kStopped,          // Stop() while it ran (a termination signal)
  kDeclaredDead,     // the coordinator answered a heartbeat with NOT_FOUND
  kLostCoordinator,  // no heartbeat answered for max(10 s, 4 leases)
  kFailed,           // the first ready partition map could not be installed
  kJobFinished,      // the coordinator announced the job finished: leave, exit 0
  kJobFailed,        // the coordinator announced the job failed (job_end_reason())
};

class Incarnation {
 public:
  // What outlives every incarnation of the process; all must outlive it.
  struct Context {
    const JobConfig* config = nullptr;  // cluster.coordinator, rpc.*
    CoordinatorClient* coordinator = nullptr;
    ShardMetrics* metrics = nullptr;     // may be null
    ParameterService* service = nullptr;
    // Where this server keeps its cold tiers (cold_rows.h): each
    // incarnation makes a store in a directory of its own below it.
    std::string cold_dir;
    // RocksDB's memory budget for each such store (ColdRowStore::Open).
    uint64_t cold_memory_bytes = ColdRowStore::kDefaultMemoryBytes;
  };

  // Builds the shard for the registration answer `registered` (server id,
  // job, partition map), sent at `registering` (the start of its lease, on
  // the monotonic clock: common/time_source.h MonotonicNow), and
  // opens this server's checkpoint store when the job checkpoints. Serves
  // nothing yet. Errors, each naming what is wrong: those of
  // CheckpointAgent::Start (a store held by another process, DataLoss) and
  // of MakeInitialState (a resume or init_from file that does not fit).
  static absl::StatusOr<std::unique_ptr<Incarnation>> Create(
      const Context& context, const v1::RegisterServerResponse& registered,
      absl::Time registering);
  ~Incarnation();  // Stop()

  // Installs the registration's partition map, serves requests from this
  // incarnation's shard (ParameterService::Attach) and starts the threads.
  // When the incarnation ends by itself it sets `*must_stop` (read by
  // WaitForTermination). Errors: those of Shard::InstallMap.
  absl::Status Begin(std::atomic<bool>* must_stop);

  // Ends the incarnation: the service refuses requests from now on (with
  // UNAVAILABLE), parked pulls fail, the threads stop, queued checkpoints are
  // written, and every value held is dropped. Waits up to `grace` for the
  // requests already running to finish; FailedPrecondition when some did
  // not (the process must then exit rather than register again). Returns how
  // the incarnation ended. Idempotent.
  absl::StatusOr<IncarnationEnd> Stop(absl::Duration grace = absl::Seconds(10));

  uint32_t server_id() const { return server_id_; }

  // kJobFailed: the cause the coordinator gave.
  std::string job_end_reason() const ABSL_LOCKS_EXCLUDED(reason_mu_) {
    absl::MutexLock lock(&reason_mu_);
    return job_end_reason_;
  }

 private:
  Incarnation(const Context& context, const v1::RegisterServerResponse& registered,
              absl::Time registering);
  void RenewLeases();
  void WatchMap();
  void ExpireWaiters();
  // Every 2 s: the shard's table stats into the metrics (rows, bytes,
  // admission, eviction per table).
  void RefreshTableMetrics();
  void End(IncarnationEnd end);
  // When `state` (from a heartbeat or watch answer) says the job is over,
  // ends the incarnation as kJobFinished or kJobFailed and returns true.
  bool JobEnded(v1::JobState state, const std::string& reason);

  const Context context_;
  const v1::RegisterServerResponse registered_;
  const uint32_t server_id_;
  const absl::Time registering_;

  // Shared with the service's Attached and the callbacks given to the shard,
  // so that a request still running after Stop() finds them alive.
  std::shared_ptr<CheckpointAgent> agent_;
  std::shared_ptr<CheckpointPartitionReader> restore_reader_;
  std::shared_ptr<Shard> shard_;
  std::shared_ptr<ReplicaTransfers> transfers_;
  std::shared_ptr<const ParameterService::Attached> attached_;

  std::atomic<bool>* must_stop_ = nullptr;
  std::atomic<bool> job_ended_{false};
  mutable absl::Mutex reason_mu_;
  std::string job_end_reason_ ABSL_GUARDED_BY(reason_mu_);
  std::atomic<bool> stop_{false};
  std::atomic<IncarnationEnd> end_{IncarnationEnd::kStopped};
  bool stopped_ = false;
  std::thread heartbeats_;
  std::thread watcher_;
  std::thread expirer_;
  std::thread table_metrics_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_INCARNATION_H_
