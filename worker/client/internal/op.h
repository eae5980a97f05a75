// ClientImpl's per-request state (Op); shared by client_impl.cc (routing, RPCs) and
// client_consistency.cc (cache, reads, joining). Internal to the library.
#ifndef CAIRN_WORKER_CLIENT_INTERNAL_OP_H_
#define CAIRN_WORKER_CLIENT_INTERNAL_OP_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cairn/v1/shard.pb.h"
#include "cairn/v1/types.pb.h"
#include "worker/client/client_impl.h"

namespace cairn {

// One pull or push across servers. Pieces complete on gRPC threads.
struct ClientImpl::Op {
  bool is_push = false;
  std::vector<TableInput> inputs;
  std::promise<absl::Status> promise;  // the result, unless a waiter takes it
  // Set when a caller waits on its own thread: calls go on its queue, the
  // result goes to Waiter::result, and a result set on another thread wakes
  // it (client_impl.h, Waiter).
  std::optional<Waiter> waiter;
  int attempt = 0;
  int64_t clock = 0;                  // the worker's clock when the op started
  // Pushes of PushAndClock: the tick the first send of the op's request
  // carries when the op is that one request (PushRequest.end_clock); 0:
  // none.
  int64_t end_clock = 0;
  // Pulls of PushClockAndPull: the op reads iteration `clock` = clock() + 1,
  // sent before this worker's tick of clock() is acknowledged. Its requests
  // say so (PullRequest.after_tick) while clock() < `clock`; sent again
  // after the tick, they are plain pulls.
  bool after_tick = false;
  // Until the op's first Launch takes it (RunOptions::rider), on Run's
  // thread: where the push and the pull of PushClockAndPull meet.
  RiderSlot* rider = nullptr;
  // Pushes of a GradientStream: the count of the values written, which the
  // op's one request carries on its first send (PushPayload::written).
  const std::atomic<uint64_t>* written = nullptr;
  absl::Time start;                   // monotonic (common/time_source.h)
  std::vector<uint64_t> generations;  // pulls: each input's cache generation at start
  std::vector<uint64_t> hits;         // pulls: keys of each input served from the cache
  std::vector<uint64_t> misses;       // pulls: keys of each input sent to servers

  absl::Mutex mu;
  int outstanding ABSL_GUARDED_BY(mu) = 0;
  absl::Status error ABSL_GUARDED_BY(mu);
  // Pulls: (input index, indices) to send again after a map refresh.
  InputIndices retry ABSL_GUARDED_BY(mu);
  // Pushes: requests to send again, unchanged but for the map version, to
  // their group's primary then (same sequence: applied exactly once).
  std::vector<std::shared_ptr<PushPayload>> push_retry ABSL_GUARDED_BY(mu);
  // Pushes: sends whose value slices gRPC still holds (each send's pin, see
  // push_payload.h), and the result waiting for them to reach 0.
  int pinned_sends ABSL_GUARDED_BY(mu) = 0;
  std::optional<absl::Status> result ABSL_GUARDED_BY(mu);
  // Per server: pieces sent and not yet answered, and the sends waiting for
  // one of them to end (ClientOptions::requests_in_flight).
  std::map<uint32_t, int> in_flight ABSL_GUARDED_BY(mu);
  std::map<uint32_t, std::deque<std::function<void()>>> waiting ABSL_GUARDED_BY(mu);
  bool refresh ABSL_GUARDED_BY(mu) = false;
  // Pushes: servers that recorded the op's end_clock (PushResponse.ticked).
  std::set<uint32_t> ticked ABSL_GUARDED_BY(mu);
  // Set by the op's first Launch: the servers its requests went to, and
  // whether that send carried end_clock (PushClockAndPull chooses by them
  // where the iteration's ticks travel).
  bool launched ABSL_GUARDED_BY(mu) = false;
  std::set<uint32_t> first_servers ABSL_GUARDED_BY(mu);
  bool carried_tick ABSL_GUARDED_BY(mu) = false;
  // Pulls: per input, the oldest server min clock its values reflect.
  std::vector<int64_t> oldest_min_clock ABSL_GUARDED_BY(mu);
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_INTERNAL_OP_H_
