// A worker's clock ticks in flight to the servers (ParameterService.Clock,
// proto/cairn/v1/shard.proto). Client::Clock sends tick t to every live
// server and returns without waiting: the tick travels ahead of the next
// pull, which the server holds until the tick is in (docs/design.md,
// Consistency). A tick that fails retriably (a server failing over, a stale
// map; RetriableShardStatus) is sent again after a map refresh, backing off
// (kShardRetryBackoff), until its deadline: ticks are idempotent on the
// server. The first tick that failed for good is kept; the next Clock and
// Finish report it.
//
// Thread-safe. Answers arrive on the thread that completes the channel's
// calls (ShardChannel::Clock); retries run on the client's executor
// (Hooks::post), never there.
#ifndef CAIRN_WORKER_CLIENT_CLOCK_TICKER_H_
#define CAIRN_WORKER_CLIENT_CLOCK_TICKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/client/shard_channel.h"

namespace cairn {

class ClockTicker {
 public:
  // Where a tick to one server goes under the client's current map.
  struct Route {
    std::shared_ptr<ShardChannel> channel;  // null: the server is gone or not ALIVE
    uint64_t map_version = 0;
  };
  // What the ticker needs of its client; each must be safe to call from
  // any thread.
  struct Hooks {
    std::function<Route(uint32_t server)> route;
    // Fetches the partition map again; may block (runs on the executor).
    std::function<absl::Status()> refresh_map;
    // Queues a task on the client's executor.
    std::function<void(std::function<void()>)> post;
    // Non-OK once the worker can no longer take part (declared dead, the
    // coordinator lost, the job failed): a tick is not retried then.
    std::function<absl::Status()> lost;
  };

  // `rpc_deadline` bounds each attempt (ClientOptions::rpc_deadline).
  ClockTicker(Hooks hooks, uint32_t worker_id, uint64_t incarnation, absl::Duration rpc_deadline);
  // Waits for every tick in flight (their callbacks reference this object).
  ~ClockTicker();

  ClockTicker(const ClockTicker&) = delete;
  ClockTicker& operator=(const ClockTicker&) = delete;

  // Sends tick `clock` to `server` and returns at once. Retried as above
  // until `give_up` (wall clock, as the RPC deadlines); a server that is
  // gone or no longer ALIVE when a send is due gets no tick and no error.
  void Send(uint32_t server, int64_t clock, absl::Time give_up) ABSL_LOCKS_EXCLUDED(mu_);

  // The first tick that failed for good (annotated "clock to server N"), or
  // OK.
  absl::Status error() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until no tick is in flight, retries included; returns error().
  absl::Status Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Attempt(uint32_t server, int64_t clock, int attempt, absl::Time give_up)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends one tick in flight; keeps `failure` when it is the first.
  void End(absl::Status failure) ABSL_LOCKS_EXCLUDED(mu_);

  const Hooks hooks_;
  const uint32_t worker_id_;
  const uint64_t incarnation_;
  const absl::Duration rpc_deadline_;

  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_CLOCK_TICKER_H_
