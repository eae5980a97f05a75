#include "worker/client/client_impl.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cairn/v1/coordinator.pb.h"
#include "common/busy_poll.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/partitioning.h"
#include "common/poll_ahead.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "common/time_source.h"
#include "common/wire_dtype.h"
#include "worker/client/internal/op.h"
#include "worker/client/request_plan.h"

namespace cairn {
namespace {

// One request to one replica group's primary.
struct Piece {
  std::shared_ptr<ClientImpl::Op> op;
  PlannedRequest request;  // its group and (input, indices); a resent push: the group only
  uint32_t server = 0;
  grpc::ClientContext context;
  v1::PullRequest pull;
  v1::PullResponse pull_response;
  std::shared_ptr<PushPayload> push;  // built once: a retry sends the same bytes
  v1::PushResponse push_response;
  std::shared_ptr<ShardChannel> channel;  // the call's (reads a pull's values)
};

// Wakes a waiting caller's queue (Fulfil): the op it stands for is done.
class WakeTag final : public CqTag {
 public:
  void Complete(bool /*ok*/) override { woken_ = true; }
  bool woken() const { return woken_; }

 private:
  bool woken_ = false;  // only the thread driving the queue reads and writes it
};

// One op a caller waits for on its own queue (ClientImpl::Waiter): how it
// learns that the op is done. Declared after the queue, so the alarm goes
// before the queue it may be set on.
struct QueueWait {
  grpc::Alarm wake;
  WakeTag tag;
  bool fulfilled_here = false;
  absl::Status result;  // the op's, once done()

  bool done() const { return fulfilled_here || tag.woken(); }
};

// Takes one event off `cq` and completes it, waiting at most `wait`: false
// once the queue is shut down.
bool NextWithin(grpc::CompletionQueue* cq, absl::Duration wait) {
  void* tag = nullptr;
  bool ok = false;
  switch (cq->AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + wait))) {
    case grpc::CompletionQueue::GOT_EVENT:
      static_cast<CqTag*>(tag)->Complete(ok);
      return true;
    case grpc::CompletionQueue::SHUTDOWN:
      return false;
    case grpc::CompletionQueue::TIMEOUT:
      return true;
  }
  return true;
}

// Completes `cq`'s events on this thread until `wait`'s op is done, polling
// without sleeping for the first `busy_poll` (ClientOptions::busy_poll).
// Other ops' events on the queue are completed on the way. `ahead` learns
// how long waits for calls in slots last, so that one longer than the
// window is polled again around when its answer is due (common/poll_ahead.h).
void DriveUntil(grpc::CompletionQueue* cq, const QueueWait& wait, absl::Duration busy_poll,
                PollAhead& ahead) {
  void* tag = nullptr;
  bool ok = false;
  // Calls posted through call slots (call_slot_client.h) end here too:
  // the queue is then polled once per look at the slots, and waited on a
  // millisecond at a time. A client that may post any holds InUse() true
  // for its life (SlotWaits::Expecting), so this holds for the whole wait.
  const bool slots = SlotWaits::InUse();
  const absl::Time start = absl::Now();
  const bool waits = !wait.done();
  if (busy_poll > absl::ZeroDuration()) {
    const absl::Time until = start + busy_poll;
    while (!wait.done()) {
      if (slots && SlotWaits::Poll(cq)) continue;
      const PollResult polled = PollUntil(cq, slots ? absl::InfinitePast() : until, &tag, &ok);
      if (polled == PollResult::kShutdown) return;
      if (polled == PollResult::kEvent) {
        static_cast<CqTag*>(tag)->Complete(ok);
        continue;
      }
      if (absl::Now() >= until) break;
    }
  }
  if (!slots) {
    while (!wait.done() && cq->Next(&tag, &ok)) static_cast<CqTag*>(tag)->Complete(ok);
    return;
  }
  const std::optional<PollAhead::Span> again = wait.done() ? std::nullopt : ahead.Again(start);
  while (!wait.done()) {
    if (SlotWaits::Poll(cq)) continue;
    const absl::Time now = absl::Now();
    absl::Duration nap = absl::Milliseconds(1);
    if (again.has_value() && now < again->until) {
      if (now >= again->from - busy_poll) {
        // Due: poll as in the window.
        const PollResult polled = PollUntil(cq, absl::InfinitePast(), &tag, &ok);
        if (polled == PollResult::kShutdown) return;
        if (polled == PollResult::kEvent) static_cast<CqTag*>(tag)->Complete(ok);
        continue;
      }
      // A window early, as a server's loop wakes (completion_loop.cc).
      nap = std::min(nap, again->from - busy_poll - now);
    }
    if (!NextWithin(cq, nap)) return;
  }
  if (waits) ahead.Record(absl::Now() - start);
}

// Shuts `cq` down once every op on it is done, and completes what is left:
// calls in call slots end first (by their answers, or their deadlines).
void DrainQueue(grpc::CompletionQueue* cq) {
  while (SlotWaits::Pending(cq)) {
    if (!SlotWaits::Poll(cq)) NextWithin(cq, absl::Milliseconds(1));
  }
  cq->Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<CqTag*>(tag)->Complete(ok);
}

// Sets `op`'s result, once. A caller waiting on its own queue
// (RunAndWait) learns of it on its own thread through `fulfilled_here`, or
// from another thread through the alarm, set after the result so that the
// caller, which stops driving the queue when the alarm's event arrives, finds
// the result there.
void Fulfil(ClientImpl::Op& op, absl::Status status) {
  if (!op.waiter.has_value()) {
    op.promise.set_value(std::move(status));
    return;
  }
  const auto waiter = *op.waiter;  // (ClientImpl::Waiter)
  *waiter.result = std::move(status);
  if (std::this_thread::get_id() == waiter.thread) {
    *waiter.fulfilled_here = true;
    return;
  }
  // The alarm's event, taken off the queue by the waiting thread, orders
  // the result's write before that thread reads it.
  waiter.wake->Set(waiter.cq, gpr_now(GPR_CLOCK_MONOTONIC), waiter.wake_tag);
}

// Held by each value slice of one push attempt (push_payload.h): the op's
// future waits until gRPC has released them all.
struct SendPin {
  std::shared_ptr<ClientImpl::Op> op;
  std::shared_ptr<PushPayload> payload;  // its gathered buffers are on the wire

  SendPin(std::shared_ptr<ClientImpl::Op> o, std::shared_ptr<PushPayload> p)
      : op(std::move(o)), payload(std::move(p)) {
    absl::MutexLock lock(&op->mu);
    ++op->pinned_sends;
  }
  ~SendPin() {
    std::optional<absl::Status> result;
    {
      absl::MutexLock lock(&op->mu);
      if (--op->pinned_sends == 0 && op->result.has_value()) {
        result = std::move(op->result);
        op->result.reset();
      }
    }
    if (result.has_value()) Fulfil(*op, *std::move(result));
  }
  SendPin(const SendPin&) = delete;
  SendPin& operator=(const SendPin&) = delete;
};

// Value buffers that follow one another in memory, as one run of bytes:
// what a lent block must hold whole for a call to use it in place.
class ContiguousRun {
 public:
  // Adds `bytes` at `at`; false (the run is broken) unless `at` is where
  // the buffers added before end.
  bool Add(const char* at, uint64_t bytes) {
    if (next_ != nullptr && at != next_) return false;
    if (first_ == nullptr) first_ = at;
    next_ = at + bytes;
    return true;
  }
  const char* first() const { return first_; }
  const char* next() const { return next_; }
  uint64_t bytes() const { return static_cast<uint64_t>(next_ - first_); }

 private:
  const char* first_ = nullptr;
  const char* next_ = nullptr;
};

}  // namespace

ClientImpl::ClientImpl(const ClientOptions& options,
                       std::unique_ptr<CoordinatorChannel> coordinator, ShardConnector connect)
    : options_(options),
      coordinator_(std::move(coordinator)),
      connect_(std::move(connect)),
      cache_(options.cache_bytes) {
  if (options_.call_slots && options_.shared_memory &&
      options_.busy_poll > absl::ZeroDuration()) {
    expecting_slots_.emplace();
  }
}

ClientImpl::~ClientImpl() {
  DrainClocks().IgnoreError();  // callbacks must not outlive the client
  if (session_ != nullptr) session_->StopAndWait();  // before the executor it posts to
  tasks_.Close();  // the executor runs what is queued, then ends
  if (executor_thread_.joinable()) executor_thread_.join();
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  // The watch only waits at the start-up barrier: on the calling thread, so
  // that the process runs no gRPC callback threads (call_queue.h).
  auto coordinator = std::make_unique<CoordinatorClient>(
      options.coordinator, 1ll << 30, absl::ZeroDuration(),
      CoordinatorClient::WatchWait::kCallingThread);
  auto client = std::make_unique<ClientImpl>(options, std::move(coordinator), nullptr);
  RETURN_IF_ERROR(client->Start());
  return std::unique_ptr<Client>(std::move(client));
}

absl::Status ClientImpl::Start() {
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  v1::RegisterWorkerRequest request;
  request.set_requested_id(options_.worker_id);
  request.set_metrics_address(options_.metrics_address);
  ASSIGN_OR_RETURN(v1::RegisterWorkerResponse registered,
                   coordinator_->RegisterWorker(request, deadline));
  worker_id_ = registered.worker_id();
  incarnation_ = registered.incarnation();
  job_ = registered.job();
  if (!connect_) {
    ShardChannelOptions channel;
    channel.max_message_bytes = job_.max_message_bytes();
    channel.dead_after = absl::Milliseconds(job_.lease_timeout_ms());
    channel.shared_memory_bytes = options_.shared_memory ? job_.shared_memory_bytes() : 0;
    channel.shared_memory_off = !options_.shared_memory
                                    ? "this client's ClientOptions::shared_memory is false"
                                    : "the job's rpc.shared_memory is false";
    channel.call_slots = options_.call_slots && options_.busy_poll > absl::ZeroDuration();
    channel.worker_id = worker_id_;
    channel.incarnation = incarnation_;
    channel.counters = shared_memory_;
    connect_ = GrpcShardConnector(std::move(channel));
  }
  session_ = std::make_unique<WorkerSession>(coordinator_.get(), worker_id_, incarnation_, job_);
  ticks_ = std::make_unique<ClockTicker>(
      ClockTicker::Hooks{
          .route =
              [this](uint32_t server) {
                std::shared_ptr<const Servers> servers = this->servers();
                auto channel = servers->channels.find(server);
                if (channel == servers->channels.end() || !servers->alive.contains(server)) {
                  return ClockTicker::Route{};
                }
                return ClockTicker::Route{channel->second, servers->router.version()};
              },
          .refresh_map = [this] { return RefreshMap(); },
          .post = [this](std::function<void()> task) { Post(std::move(task)); },
          .lost = [this] { return Lost(); },
      },
      worker_id_, incarnation_, options_.rpc_deadline);
  for (const v1::TableSpec& t : job_.tables()) tables_by_name_[t.name()] = &t;
  if (options_.metrics_registry != nullptr) {
    metrics_ = std::make_unique<ClientMetrics>(*options_.metrics_registry, job_);
  }
  // The start-up barrier had passed (or this registration completed it).
  const bool late = registered.map().ready();
  executor_thread_ = std::thread([this] { ExecutorLoop(); });
  if (options_.heartbeat) {
    session_->StartHeartbeats(WorkerSession::Hooks{
        .clock = [this] { return clock_.load(); },
        .map_version =
            [this]() -> uint64_t {
              std::shared_ptr<const Servers> s = servers();
              return s == nullptr ? 0 : s->router.version();
            },
        .on_newer_map =
            [this] {
              // Fetched on the executor, never on the heartbeat thread.
              if (map_refresh_posted_.exchange(true)) return;
              Post([this] {
                map_refresh_posted_.store(false);
                if (absl::Status st = RefreshMap(); !st.ok()) {
                  LOG_WARN("cannot refresh the partition map: {}", st.message());
                }
              });
            },
    });
  }

  v1::PartitionMap map = registered.map();
  while (!map.ready()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "start-up barrier: after ", absl::FormatDuration(options_.connect_timeout), ", ",
          map.servers_size(), " of ", job_.num_servers(), " servers and ", map.workers_size(),
          " of ", job_.num_workers(), " workers have registered"));
    }
    absl::StatusOr<v1::GetPartitionMapResponse> next = coordinator_->WatchPartitionMap(
        map.version(), std::min(absl::Seconds(2), deadline - absl::Now()));
    if (next.ok() && next->job_state() == v1::JOB_STATE_FAILED) {
      return absl::CancelledError(absl::StrCat(
          "the coordinator ended the job as failed: ", next->job_end_reason()));
    }
    if (next.ok() && next->job_state() == v1::JOB_STATE_FINISHED) {
      return absl::FailedPreconditionError("the job is over (finished); it takes no new members");
    }
    if (next.ok()) {
      map = next->map();
    } else {
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  for (const v1::Member& w : map.workers()) {
    if (w.id() == worker_id_) clock_.store(w.start_clock());
  }
  RETURN_IF_ERROR(InstallMap(map));
  if (late) RETURN_IF_ERROR(JoinAtMinimum(deadline));
  return absl::OkStatus();
}



absl::StatusOr<const v1::TableSpec*> ClientImpl::Table(const std::string& name) const {
  auto it = tables_by_name_.find(name);
  if (it == tables_by_name_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown table \"", name, "\""));
  }
  return it->second;
}

absl::Status ClientImpl::InstallMap(const v1::PartitionMap& map) {
  absl::MutexLock install(&install_mu_);
  std::shared_ptr<const Servers> old = this->servers();
  if (old != nullptr && old->router.version() >= map.version()) return absl::OkStatus();
  ASSIGN_OR_RETURN(Router router, Router::Create(map));
  auto servers = std::make_shared<Servers>(Servers{std::move(router), {}, {}, {}, {}});
  servers->only_worker = map.workers_size() == 1 && map.workers(0).id() == worker_id_;
  for (const v1::Member& m : map.servers()) {
    servers->addresses[m.id()] = m.address();
    servers->incarnations[m.id()] = m.incarnation();
    if (m.state() == v1::MEMBER_STATE_ALIVE) servers->alive.insert(m.id());
    if (old != nullptr) {
      // The same process at the same address: keep its warm channel. A
      // server registered again (a restart under its id) gets a fresh one:
      // the old channel's connection attempts, failing while it was down,
      // would hold the first calls for seconds (field case C07).
      auto a = old->addresses.find(m.id());
      auto i = old->incarnations.find(m.id());
      if (a != old->addresses.end() && a->second == m.address() &&
          i != old->incarnations.end() && i->second == m.incarnation()) {
        servers->channels[m.id()] = old->channels.at(m.id());
        continue;
      }
    }
    servers->channels[m.id()] = connect_(m.address());
  }
  absl::MutexLock lock(&mu_);
  if (servers_ != nullptr && servers_->router.version() >= map.version()) return absl::OkStatus();
  servers_ = std::move(servers);
  return absl::OkStatus();
}

absl::Status ClientImpl::RefreshMap() {
  ASSIGN_OR_RETURN(v1::GetPartitionMapResponse r,
                   coordinator_->GetPartitionMap(options_.rpc_deadline));
  return InstallMap(r.map());
}

std::unique_ptr<SharedBuffer> ClientImpl::LendSharedBuffer(size_t bytes) {
  std::shared_ptr<const Servers> current = servers();
  if (current == nullptr || current->alive.size() != 1) return nullptr;
  auto channel = current->channels.find(*current->alive.begin());
  if (channel == current->channels.end()) return nullptr;
  return channel->second->Lend(bytes);
}

std::shared_ptr<const ClientImpl::Servers> ClientImpl::servers() const {
  absl::MutexLock lock(&mu_);
  return servers_;
}

uint64_t ClientImpl::NextSequence(uint32_t group) {
  absl::MutexLock lock(&mu_);
  return ++next_sequence_[group];
}

void ClientImpl::Post(std::function<void()> task) {
  tasks_.Push(std::move(task));
}

void ClientImpl::ExecutorLoop() {
  while (std::optional<std::function<void()>> task = tasks_.Pop()) (*task)();
}

std::future<absl::Status> ClientImpl::Run(bool is_push, std::vector<TableInput> inputs,
                                          const RunOptions& run) {
  if (absl::Status lost = Lost(); !lost.ok()) {
    if (run.waiter != nullptr) {
      // Set on the waiter's thread (the caller's): it must not wait on its
      // queue for an op that never started.
      *run.waiter->result = std::move(lost);
      *run.waiter->fulfilled_here = true;
      return {};
    }
    std::promise<absl::Status> p;
    p.set_value(std::move(lost));
    return p.get_future();
  }
  auto op = std::make_shared<Op>();
  if (run.waiter != nullptr) op->waiter = *run.waiter;
  op->is_push = is_push;
  op->inputs = std::move(inputs);
  op->clock = run.ahead_clock.value_or(clock_.load());
  op->after_tick = run.ahead_clock.has_value();
  op->end_clock = run.end_clock;
  op->rider = run.rider;
  op->written = run.written;
  op->start = MonotonicNow();
  if (run.op_out != nullptr) *run.op_out = op;
  std::future<absl::Status> result;
  if (!op->waiter.has_value()) result = op->promise.get_future();
  if (is_push) {
    InvalidatePushed(*op);
    Launch(op, nullptr);
    return result;
  }
  InputIndices misses = ServeFromCache(op.get());
  uint64_t hits = 0;
  for (uint64_t h : op->hits) hits += h;
  if (misses.empty()) {
    op->rider = nullptr;
    OnOpDone(op);  // every key came from the cache
  } else {
    Launch(op, hits == 0 ? nullptr : &misses);
  }
  return result;
}


bool ClientImpl::WholeInLentBlock(const Op& op, const ShardChannel& channel) {
  ContiguousRun run;
  for (const TableInput& in : op.inputs) {
    if (in.keys != nullptr || WireDtypeOrFloat32(in.spec->wire_dtype()) != v1::DTYPE_FLOAT32) {
      return false;
    }
    const char* values = reinterpret_cast<const char*>(op.is_push ? in.in : in.out);
    if (values == nullptr || !run.Add(values, DenseElements(*in.spec) * sizeof(float))) {
      return false;
    }
  }
  return run.first() != nullptr && channel.InLentMemory(run.first(), run.bytes());
}

bool ClientImpl::OutputSpoiled(const Op& op, const ShardChannel& channel) {
  for (const TableInput& in : op.inputs) {
    const uint64_t floats = in.keys == nullptr ? DenseElements(*in.spec)
                                               : in.n * static_cast<uint64_t>(in.spec->width());
    if (channel.InSpoiledLentMemory(reinterpret_cast<const char*>(in.out),
                                    floats * sizeof(float))) {
      return true;
    }
  }
  return false;
}

void ClientImpl::Launch(const std::shared_ptr<Op>& op,
                        const InputIndices* only,
                        std::vector<std::shared_ptr<PushPayload>> resend) {
  // Only the op's first Launch, on Run's thread, may meet the other op of
  // PushClockAndPull; a retry, later, on another thread, finds none.
  RiderSlot* const rider = std::exchange(op->rider, nullptr);
  std::shared_ptr<const Servers> servers = this->servers();
  std::vector<std::unique_ptr<Piece>> pieces;
  for (std::shared_ptr<PushPayload>& r : resend) {
    // Retried pushes keep their requests: nothing to route.
    auto piece = std::make_unique<Piece>();
    piece->request.group = r->header.group();
    piece->push = std::move(r);
    pieces.push_back(std::move(piece));
  }
  if (pieces.empty()) {
    // Values through a shared region leave the message small: such a
    // server's share is cut at the larger split, in fewer round trips.
    const uint64_t split = std::max<int64_t>(job_.request_split_bytes(), 4096);
    const uint64_t shared_split = job_.shared_memory_split_bytes() > 0
                                      ? std::max<int64_t>(job_.shared_memory_split_bytes(), 4096)
                                      : split;
    // A one-group map's dense model in one block its server's channel lent
    // (a model's buffer, LendSharedBuffer) is read or answered in place:
    // the request carries only keys, so the whole op goes in one, and a
    // one-server step stays one call that closes its iteration (a lent
    // block is at most a quarter of the region, which bounds its values).
    std::optional<bool> whole_lent;
    auto split_of = [&](uint32_t group) {
      if (!servers->router.HasGroup(group)) return split;
      auto channel = servers->channels.find(servers->router.GroupPrimary(group));
      if (channel == servers->channels.end() || !channel->second->SharesMemory()) return split;
      if (!whole_lent.has_value()) {
        whole_lent = servers->router.num_groups() == 1 && WholeInLentBlock(*op, *channel->second);
      }
      return *whole_lent ? std::numeric_limits<uint64_t>::max() : shared_split;
    };
    for (PlannedRequest& request : PlanRequests(op->inputs, servers->router, only, split_of)) {
      auto piece = std::make_unique<Piece>();
      piece->request = std::move(request);
      pieces.push_back(std::move(piece));
    }
  }

  const bool resending = !resend.empty();
  // The tick rides on the push only when the op is one request, on its
  // first send. A server's tick must follow every push of the iteration it
  // holds, as primary or as a backup (a backup's copies come from the other
  // primaries, by their maps, which may be newer than this client's): with
  // a second request in the op, one of its copies could reach the server
  // after the tick and miss the barrier. The server records the tick once
  // the request's backups acknowledged it; every other server gets its tick
  // after the op.
  const bool carry_tick = op->is_push && op->end_clock > 0 && !resending && pieces.size() == 1;
  bool first_launch;
  {
    absl::MutexLock lock(&op->mu);
    op->outstanding = static_cast<int>(pieces.size());
    first_launch = !std::exchange(op->launched, true);
    if (first_launch) op->carried_tick = carry_tick;
  }
  if (pieces.empty()) {
    CompleteOp(op, absl::OkStatus());
    return;
  }
  const uint64_t version = servers->router.version();
  std::set<uint32_t> sent_to;  // the first Launch's servers (Op::first_servers)
  grpc::CompletionQueue* queue = op->waiter.has_value() ? op->waiter->cq : nullptr;
  const int window = options_.requests_in_flight;
  for (std::unique_ptr<Piece>& owned : pieces) {
    Piece* piece = owned.release();
    piece->op = op;
    const bool known = servers->router.HasGroup(piece->request.group);
    piece->server = known ? servers->router.GroupPrimary(piece->request.group) : 0;
    auto channel = known ? servers->channels.find(piece->server) : servers->channels.end();
    auto finish = [this, piece, window](grpc::Status status) {
      std::shared_ptr<Op> op = piece->op;
      bool last;
      std::function<void()> next;  // a piece that waited for this one's place
      {
        absl::MutexLock lock(&op->mu);
        if (status.ok() && op->is_push && piece->push_response.ticked()) {
          op->ticked.insert(piece->server);
        }
        if (status.ok() && !op->is_push) {
          const int64_t min_clock = piece->pull_response.min_clock();
          for (size_t e = 0; e < piece->request.entries.size(); ++e) {
            const auto& [input, idx] = piece->request.entries[e];
            const TableInput& in = op->inputs[input];
            absl::StatusOr<ValuePieces> values =
                static_cast<int>(e) < piece->pull_response.tables_size()
                    ? piece->channel->PulledValues(piece->pull_response, static_cast<int>(e))
                    : absl::InvalidArgumentError("no values");
            if (!values.ok() ||
                !ScatterPulled(in, idx, piece->pull_response.tables(e).dtype(), *values)) {
              status = grpc::Status(grpc::StatusCode::INTERNAL,
                                    absl::StrCat("server ", piece->server,
                                                 " answered a pull with the wrong value size"));
              break;
            }
            op->oldest_min_clock[input] = std::min(op->oldest_min_clock[input], min_clock);
            if (!Cacheable(*in.spec)) continue;
            size_t evicted = 0;
            for (uint32_t j : idx) {
              evicted += cache_.Insert(in.spec->id(), KeyOf(in, j),
                                       absl::MakeConstSpan(in.out + OffsetOf(in, j), FloatsOf(in, j)),
                                       min_clock, op->clock, op->generations[input]);
            }
            if (metrics_ != nullptr) metrics_->Evicted(evicted);
          }
        }
        if (!status.ok()) {
          // A push that timed out may have landed: it goes again, the same
          // bytes under the same sequence, which the server applies at most
          // once (B26). A pull that timed out reads again, unless its
          // answer was to be written in place in lent memory, which the
          // server may still write late (the caller moves off it). Other
          // failures are retried within the op's time.
          const int attempts =
              std::max(op->is_push ? options_.push_attempts : options_.pull_attempts, 1);
          const bool timed_out =
              status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
              op->attempt + 1 < attempts &&
              (op->is_push || piece->channel == nullptr || !OutputSpoiled(*op, *piece->channel));
          // (A pull's other failures are retried within one deadline, as
          // before it could time out and read again.)
          const absl::Time give_up =
              op->start + (op->is_push ? attempts : 1) * options_.rpc_deadline;
          if (timed_out ||
              (RetriableShardStatus(status) && MonotonicNow() + kShardRetryBackoff.Delay(op->attempt) < give_up)) {
            if (op->is_push) {
              op->push_retry.push_back(std::move(piece->push));
            } else {
              for (auto& entry : piece->request.entries) op->retry.push_back(std::move(entry));
            }
            op->refresh = true;
          } else if (op->error.ok()) {
            const bool late = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
            // The client never cancels a push: one that ends CANCELLED was
            // ended by the server as it stopped serving, which the caller
            // sees as the server being unavailable.
            const absl::Status failed =
                op->is_push && status.error_code() == grpc::StatusCode::CANCELLED
                    ? absl::UnavailableError(absl::StrCat(
                          "the server ended the call as it stopped serving (",
                          status.error_message().empty() ? "CANCELLED" : status.error_message(),
                          ")"))
                    : FromGrpcStatus(status);
            op->error = Annotate(
                failed,
                op->is_push && late
                    ? absl::StrCat("push to server ", piece->server, " (replica group ",
                                   piece->request.group, ", sequence ",
                                   piece->push->header.sequence(), "): ",
                                   op->attempt + 1, " attempts timed out; it may have been "
                                   "applied (once) or not: pull to see")
                : late ? absl::StrCat("pull from server ", piece->server, ": ", op->attempt + 1,
                                      op->attempt == 0 ? " attempt" : " attempts", " timed out")
                       : absl::StrCat(op->is_push ? "push" : "pull", " to server ",
                                      piece->server));
          }
        }
        if (window > 0 && piece->channel != nullptr) {
          auto waiting = op->waiting.find(piece->server);
          if (waiting != op->waiting.end() && !waiting->second.empty()) {
            next = std::move(waiting->second.front());
            waiting->second.pop_front();
          } else {
            --op->in_flight[piece->server];
          }
        }
        last = --op->outstanding == 0;
      }
      delete piece;
      if (next) next();
      if (last) OnOpDone(op);
    };
    if (op->is_push && !resending) {
      // Built once: a retry sends these same bytes with the same sequence.
      piece->push = BuildPushRequest(op->inputs, piece->request,
                                     {worker_id_, incarnation_, op->clock},
                                     NextSequence(piece->request.group));
      // Streamed only as the op's one request; a resend of it reads the
      // values once written (ShardChannel).
      if (pieces.size() == 1) piece->push->written = op->written;
    }
    if (channel == servers->channels.end()) {
      finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("no primary known for replica group ",
                                       piece->request.group)));
      continue;
    }
    piece->channel = channel->second;
    if (first_launch) sent_to.insert(piece->server);
    uint64_t reply_bytes = 0;
    char* reply_into = nullptr;
    if (op->is_push) {
      piece->push->header.set_map_version(version);
      piece->push->header.set_server(piece->server);
      if (resending) {
        piece->push->header.clear_end_clock();  // it may now go to another server
      } else if (carry_tick) {
        piece->push->header.set_end_clock(op->end_clock);
      }
    } else {
      reply_bytes = BuildPullRequest(op->inputs, piece->request.entries,
                                     {worker_id_, incarnation_, op->clock}, version,
                                     &piece->pull);
      piece->pull.set_server(piece->server);
      reply_into = ContiguousDestination(op->inputs, piece->request.entries, reply_bytes);
      // Ahead of the tick only while it is: sent again after it, a pull
      // carries the tick as any pull does.
      piece->pull.set_after_tick(op->after_tick && clock_.load() < op->clock);
    }
    // PushClockAndPull (RiderSlot): the push's one request waits for the
    // pull, to one server, and the pull's one request rides on it.
    const bool ride = rider != nullptr && pieces.size() == 1 && servers->alive.size() == 1;
    if (ride && !op->is_push && rider->send_push && rider->server == piece->server) {
      if (window > 0) {
        absl::MutexLock lock(&op->mu);
        ++op->in_flight[piece->server];
      }
      piece->context.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_deadline));
      auto send_push = std::move(rider->send_push);
      rider->send_push = nullptr;
      send_push(PullRider{&piece->context, &piece->pull, reply_bytes, reply_into,
                          &piece->pull_response, std::move(finish)});
      continue;
    }
    // The deadline counts from the send: a piece may wait for its window.
    auto send = [this, piece, reply_bytes, reply_into, queue, finish = std::move(finish)](
                    std::optional<PullRider> pull) mutable {
      piece->context.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_deadline));
      if (piece->op->is_push && pull.has_value()) {
        piece->channel->PushAndPull(&piece->context, piece->push,
                                    std::make_shared<SendPin>(piece->op, piece->push),
                                    &piece->push_response, std::move(finish), pull->context,
                                    pull->request, pull->reply_bytes, pull->reply_into,
                                    pull->response, std::move(pull->done), queue);
      } else if (piece->op->is_push) {
        piece->channel->Push(&piece->context, piece->push,
                             std::make_shared<SendPin>(piece->op, piece->push),
                             &piece->push_response, std::move(finish), queue);
      } else {
        piece->channel->Pull(&piece->context, &piece->pull, reply_bytes, reply_into,
                             &piece->pull_response, std::move(finish), queue);
      }
    };
    if (ride && op->is_push && carry_tick && piece->channel->SharesMemory()) {
      if (window > 0) {
        absl::MutexLock lock(&op->mu);
        ++op->in_flight[piece->server];
      }
      rider->server = piece->server;
      rider->send_push = std::move(send);
      continue;
    }
    if (window > 0) {
      absl::MutexLock lock(&op->mu);
      int& in_flight = op->in_flight[piece->server];
      if (in_flight >= window) {
        op->waiting[piece->server].push_back(
            [send = std::move(send)]() mutable { send(std::nullopt); });
        continue;
      }
      ++in_flight;
    }
    send(std::nullopt);
  }
  if (first_launch) {
    absl::MutexLock lock(&op->mu);
    op->first_servers = std::move(sent_to);
  }
}

void ClientImpl::CompleteOp(const std::shared_ptr<Op>& op, absl::Status status) {
  {
    absl::MutexLock lock(&op->mu);
    if (op->pinned_sends > 0) {
      op->result = std::move(status);  // the last SendPin sets it
      return;
    }
  }
  Fulfil(*op, std::move(status));
}

void ClientImpl::OnOpDone(const std::shared_ptr<Op>& op) {
  InputIndices retry;
  std::vector<std::shared_ptr<PushPayload>> push_retry;
  absl::Status error;
  {
    absl::MutexLock lock(&op->mu);
    retry.swap(op->retry);
    push_retry.swap(op->push_retry);
    error = op->error;
  }
  if (!error.ok() || (retry.empty() && push_retry.empty())) {
    if (error.ok() && op->is_push) {
      // Again once applied: a pull that raced with this push may have cached
      // values without it.
      InvalidatePushed(*op);
    }
    if (error.ok() && !op->is_push) RecordReads(op.get());
    CompleteOp(op, error);
    return;
  }
  // Retry off the thread that completes calls: refresh the map (a failover moves a group to
  // a new primary), back off, send again.
  Post([this, op, retry = std::move(retry), push_retry = std::move(push_retry)]() mutable {
    absl::SleepFor(kShardRetryBackoff.Delay(op->attempt));
    ++op->attempt;
    // The coordinator is gone, declared this worker dead or failed the
    // job: no retry can succeed (C06: end within the grace, not after
    // deadlines of retries).
    if (absl::Status lost = Lost(); !lost.ok()) {
      CompleteOp(op, std::move(lost));
      return;
    }
    if (absl::Status s = RefreshMap(); !s.ok()) {
      LOG_WARN("map refresh before retry failed: {}", s.message());
    }
    {
      absl::MutexLock lock(&op->mu);
      op->refresh = false;
    }
    if (op->is_push) {
      Launch(op, nullptr, std::move(push_retry));
    } else {
      Launch(op, &retry);
    }
  });
}

namespace {

// The input of one sparse table, or an error naming it.
absl::StatusOr<TableInput> SparseInput(const ClientImpl& client, const char* verb,
                                                   const std::string& table,
                                                   absl::Span<const Key> keys, size_t floats,
                                                   float* out, const float* in) {
  ASSIGN_OR_RETURN(const v1::TableSpec* spec, client.Table(table));
  if (spec->kind() != v1::TABLE_KIND_SPARSE) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, " is not sparse"));
  }
  const size_t need = keys.size() * static_cast<size_t>(spec->width());
  if (floats != need) {
    return absl::InvalidArgumentError(absl::StrCat(verb, " table=", table, ": ", keys.size(),
                                                   " keys of width ", spec->width(), " need ",
                                                   need, " floats, got ", floats));
  }
  return TableInput{spec, keys.data(), keys.size(), 0, out, in};
}

// The input of one dense table's whole tensor, or an error naming it.
// `what`: "buffer" (pull) or "gradient" (push).
absl::StatusOr<TableInput> DenseInput(const ClientImpl& client, const char* verb,
                                                  const char* what, const std::string& table,
                                                  size_t floats, float* out, const float* in,
                                                  std::vector<int64_t> shape) {
  ASSIGN_OR_RETURN(const v1::TableSpec* spec, client.Table(table));
  if (spec->kind() != v1::TABLE_KIND_DENSE) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, " is not dense"));
  }
  if (floats != DenseElements(*spec)) {
    return absl::InvalidArgumentError(absl::StrCat(verb, " table=", table, ": ", what, " holds ",
                                                   floats, " floats, the table has ",
                                                   DenseElements(*spec)));
  }
  const uint64_t chunks = NumChunks(DenseElements(*spec), spec->chunk_size());
  return TableInput{spec, nullptr, chunks, chunks, out, in, std::move(shape)};
}

std::future<absl::Status> Failed(absl::Status error) {
  std::promise<absl::Status> p;
  p.set_value(std::move(error));
  return p.get_future();
}

}  // namespace

std::future<absl::Status> ClientImpl::PullDense(std::vector<DenseBuffer> tables) {
  return Pull(std::move(tables), {});
}

std::future<absl::Status> ClientImpl::PushDense(std::vector<ConstDenseBuffer> grads) {
  return Push(std::move(grads), {});
}

std::future<absl::Status> ClientImpl::PullSparse(const std::string& table,
                                                 absl::Span<const Key> keys,
                                                 absl::Span<float> out) {
  return Pull({}, {SparseRows{table, keys, out}});
}

std::future<absl::Status> ClientImpl::PushSparse(const std::string& table,
                                                 absl::Span<const Key> keys,
                                                 absl::Span<const float> grads) {
  return Push({}, {ConstSparseRows{table, keys, grads}});
}

std::future<absl::Status> ClientImpl::PullSparse(std::vector<SparseRows> tables) {
  return Pull({}, std::move(tables));
}

std::future<absl::Status> ClientImpl::PushSparse(std::vector<ConstSparseRows> grads) {
  return Push({}, std::move(grads));
}

absl::StatusOr<std::vector<TableInput>> ClientImpl::PullInputs(
    const std::vector<DenseBuffer>& dense, const std::vector<SparseRows>& sparse) const {
  std::vector<TableInput> inputs;
  inputs.reserve(dense.size() + sparse.size());
  for (const DenseBuffer& b : dense) {
    ASSIGN_OR_RETURN(TableInput input, DenseInput(*this, "pull", "buffer", b.table,
                                                  b.values.size(), b.values.data(), nullptr, {}));
    inputs.push_back(std::move(input));
  }
  for (const SparseRows& t : sparse) {
    ASSIGN_OR_RETURN(TableInput input, SparseInput(*this, "pull", t.table, t.keys,
                                                   t.values.size(), t.values.data(), nullptr));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

absl::StatusOr<std::vector<TableInput>> ClientImpl::PushInputs(
    const std::vector<ConstDenseBuffer>& dense, const std::vector<ConstSparseRows>& sparse) const {
  std::vector<TableInput> inputs;
  inputs.reserve(dense.size() + sparse.size());
  for (const ConstDenseBuffer& b : dense) {
    ASSIGN_OR_RETURN(TableInput input, DenseInput(*this, "push", "gradient", b.table,
                                                  b.values.size(), nullptr, b.values.data(),
                                                  b.shape));
    inputs.push_back(std::move(input));
  }
  for (const ConstSparseRows& t : sparse) {
    ASSIGN_OR_RETURN(TableInput input, SparseInput(*this, "push", t.table, t.keys,
                                                   t.values.size(), nullptr, t.values.data()));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

std::future<absl::Status> ClientImpl::Pull(std::vector<DenseBuffer> dense,
                                           std::vector<SparseRows> sparse) {
  absl::StatusOr<std::vector<TableInput>> inputs = PullInputs(dense, sparse);
  if (!inputs.ok()) return Failed(inputs.status());
  return Run(false, *std::move(inputs), RunOptions());
}

std::future<absl::Status> ClientImpl::Push(std::vector<ConstDenseBuffer> dense,
                                           std::vector<ConstSparseRows> sparse) {
  absl::StatusOr<std::vector<TableInput>> inputs = PushInputs(dense, sparse);
  if (!inputs.ok()) return Failed(inputs.status());
  return Run(true, *std::move(inputs), RunOptions());
}

absl::Status ClientImpl::PullAndWait(std::vector<DenseBuffer> dense,
                                     std::vector<SparseRows> sparse) {
  ASSIGN_OR_RETURN(std::vector<TableInput> inputs, PullInputs(dense, sparse));
  return RunAndWait(false, std::move(inputs));
}

absl::Status ClientImpl::PushAndWait(std::vector<ConstDenseBuffer> dense,
                                     std::vector<ConstSparseRows> sparse) {
  ASSIGN_OR_RETURN(std::vector<TableInput> inputs, PushInputs(dense, sparse));
  return RunAndWait(true, std::move(inputs));
}

absl::Status ClientImpl::PushAndClock(std::vector<ConstDenseBuffer> dense,
                                      std::vector<ConstSparseRows> sparse) {
  RETURN_IF_ERROR(CanEndIteration());
  ASSIGN_OR_RETURN(std::vector<TableInput> inputs, PushInputs(dense, sparse));
  std::set<uint32_t> ticked;
  absl::Status pushed = RunAndWait(true, std::move(inputs), clock_.load() + 1, &ticked);
  EndIteration(ticked);
  return pushed;
}

absl::Status ClientImpl::PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                          std::vector<ConstSparseRows> sparse,
                                          std::vector<DenseBuffer> next_dense,
                                          std::vector<SparseRows> next_sparse,
                                          absl::Status* pulled,
                                          absl::FunctionRef<void()> meanwhile) {
  return PushClockAndPullImpl(std::move(dense), std::move(sparse), std::move(next_dense),
                              std::move(next_sparse), pulled, meanwhile, nullptr);
}

absl::Status ClientImpl::PushClockAndPull(std::vector<ConstDenseBuffer> dense,
                                          std::vector<DenseBuffer> next_dense,
                                          absl::Status* pulled,
                                          absl::FunctionRef<void()> meanwhile,
                                          const GradientStream& stream) {
  stream.written->store(0, std::memory_order_release);
  if (!CanStream(dense, stream.written)) {
    stream.write();
    return PushClockAndPullImpl(std::move(dense), {}, std::move(next_dense), {}, pulled,
                                meanwhile, nullptr);
  }
  bool wrote = false;
  absl::Status pushed = PushClockAndPullImpl(
      std::move(dense), {}, std::move(next_dense), {}, pulled,
      [&] {
        stream.write();
        wrote = true;
        meanwhile();
      },
      stream.written);
  if (!wrote) stream.write();  // refused before it was sent
  return pushed;
}

bool ClientImpl::CanStream(const std::vector<ConstDenseBuffer>& dense,
                           const std::atomic<uint64_t>* written) const {
  std::shared_ptr<const Servers> servers = this->servers();
  if (servers == nullptr || !servers->only_worker || servers->alive.size() != 1 ||
      servers->router.num_groups() != 1 || dense.empty()) {
    return false;
  }
  auto channel = servers->channels.find(*servers->alive.begin());
  if (channel == servers->channels.end() || !channel->second->SharesMemory()) return false;
  ContiguousRun run;
  for (const ConstDenseBuffer& b : dense) {
    absl::StatusOr<const v1::TableSpec*> spec = Table(b.table);
    if (!spec.ok() || (*spec)->kind() != v1::TABLE_KIND_DENSE ||
        (*spec)->consistency() != v1::CONSISTENCY_BSP ||
        WireDtypeOrFloat32((*spec)->wire_dtype()) != v1::DTYPE_FLOAT32 ||
        b.values.size() != DenseElements(**spec)) {
      return false;
    }
    if (!run.Add(reinterpret_cast<const char*>(b.values.data()),
                 b.values.size() * sizeof(float))) {
      return false;
    }
  }
  const char* word = reinterpret_cast<const char*>(written);
  return reinterpret_cast<uintptr_t>(word) % alignof(std::atomic<uint64_t>) == 0 &&
         (word >= run.next() || word + sizeof(uint64_t) <= run.first()) &&
         channel->second->InLentMemory(run.first(), run.bytes()) &&
         channel->second->InLentMemory(word, sizeof(uint64_t));
}

absl::Status ClientImpl::PushClockAndPullImpl(std::vector<ConstDenseBuffer> dense,
                                              std::vector<ConstSparseRows> sparse,
                                              std::vector<DenseBuffer> next_dense,
                                              std::vector<SparseRows> next_sparse,
                                              absl::Status* pulled,
                                              absl::FunctionRef<void()> meanwhile,
                                              const std::atomic<uint64_t>* written) {
  *pulled = absl::CancelledError("pull ahead not sent: the push was refused before it");
  RETURN_IF_ERROR(CanEndIteration());
  ASSIGN_OR_RETURN(std::vector<TableInput> push_inputs, PushInputs(dense, sparse));
  ASSIGN_OR_RETURN(std::vector<TableInput> pull_inputs, PullInputs(next_dense, next_sparse));
  grpc::CompletionQueue cq;
  QueueWait push_wait;
  QueueWait pull_wait;
  const std::thread::id self = std::this_thread::get_id();
  const Waiter push_waiter{&cq, &push_wait.wake, &push_wait.tag, self,
                           &push_wait.fulfilled_here, &push_wait.result};
  const Waiter pull_waiter{&cq, &pull_wait.wake, &pull_wait.tag, self,
                           &pull_wait.fulfilled_here, &pull_wait.result};
  const int64_t next = clock_.load() + 1;
  std::shared_ptr<Op> push_op;
  // With one server, the pull rides on the push's request when each is one
  // (RiderSlot): one call per step instead of two.
  RiderSlot rider;
  // The push first: it drops its keys from the cache before the pull
  // looks there.
  Run(true, std::move(push_inputs),
      RunOptions{.waiter = &push_waiter,
                 .end_clock = next,
                 .op_out = &push_op,
                 .rider = &rider,
                 .written = written});
  // When the push carries the iteration's tick (it is one request), the
  // pull goes with it, ahead of the tick, and its server answers it once
  // the push is applied. Otherwise each server's tick would be a call of
  // its own once the push is acknowledged: the pull goes then instead, as a
  // plain pull, which carries the tick to every server it reads from. The
  // values arrive after as many round trips either way, in fewer calls.
  bool ahead = false;
  if (push_op != nullptr) {  // null: refused before it started (Lost)
    absl::MutexLock lock(&push_op->mu);
    ahead = push_op->carried_tick;
  }
  if (ahead) {
    Run(false, std::move(pull_inputs),
        RunOptions{.waiter = &pull_waiter, .ahead_clock = next, .rider = &rider});
  }
  if (rider.send_push) {  // the pull did not ride: the push goes alone
    auto send_push = std::move(rider.send_push);
    rider.send_push = nullptr;
    send_push(std::nullopt);
  }
  meanwhile();  // both are on their way
  DriveUntil(&cq, push_wait, options_.busy_poll, answers_ahead_);
  absl::Status pushed = std::move(push_wait.result);
  std::set<uint32_t> ticked;
  if (push_op != nullptr) {
    absl::MutexLock lock(&push_op->mu);
    ticked = push_op->ticked;
  }
  if (ahead) {
    EndIteration(ticked);  // the ticks the pull waits for on the other servers
  } else {
    clock_.store(next);  // the pull reads iteration `next` and carries its tick
    std::shared_ptr<Op> pull_op;
    Run(false, std::move(pull_inputs), RunOptions{.waiter = &pull_waiter, .op_out = &pull_op});
    std::set<uint32_t> carried = ticked;
    if (pull_op != nullptr) {
      absl::MutexLock lock(&pull_op->mu);
      carried.insert(pull_op->first_servers.begin(), pull_op->first_servers.end());
    }
    SendTicks(next, carried);  // servers the pull does not read from
  }
  DriveUntil(&cq, pull_wait, options_.busy_poll, answers_ahead_);
  DrainQueue(&cq);
  absl::Status pull_status = std::move(pull_wait.result);
  // A pull refused before its server ticked may have carried no tick:
  // ticks are idempotent, so every server not ticked by the push gets one.
  if (!ahead && !pull_status.ok()) SendTicks(next, ticked);
  // (The context is formatted only for an error: this runs every step.)
  *pulled = pull_status.ok() ? absl::OkStatus()
                             : Annotate(pull_status, absl::StrCat("pull of iteration ", next,
                                                                  " ahead"));
  return pushed;
}

absl::Status ClientImpl::RunAndWait(bool is_push, std::vector<TableInput> inputs,
                                    int64_t end_clock, std::set<uint32_t>* ticked) {
  // Declared in this order so the alarm goes before the queue it may be set
  // on; both outlive every call of the op (the queue is drained below).
  grpc::CompletionQueue cq;
  QueueWait wait;
  const Waiter waiter{&cq, &wait.wake, &wait.tag, std::this_thread::get_id(),
                      &wait.fulfilled_here, &wait.result};
  std::shared_ptr<Op> op;
  Run(is_push, std::move(inputs),
      RunOptions{.waiter = &waiter, .end_clock = end_clock, .op_out = &op});
  // The op's calls complete here, on this thread, until the result is set:
  // here (a call's completion), or elsewhere (a retry on the client's
  // executor, the last slice of a push released by gRPC), which then sets
  // the alarm. Nothing is started on the queue after either.
  DriveUntil(&cq, wait, options_.busy_poll, answers_ahead_);
  DrainQueue(&cq);
  absl::Status status = std::move(wait.result);
  if (ticked != nullptr && op != nullptr) {  // null: refused before it started (Lost)
    absl::MutexLock lock(&op->mu);
    *ticked = op->ticked;
  }
  return status;
}

absl::Status ClientImpl::CanEndIteration() const {
  if (finished_.load()) return absl::FailedPreconditionError("client already finished");
  RETURN_IF_ERROR(Lost());
  return ticks_->error();
}

absl::Status ClientImpl::Clock() {
  RETURN_IF_ERROR(CanEndIteration());
  EndIteration({});
  return absl::OkStatus();
}

void ClientImpl::EndIteration(const std::set<uint32_t>& ticked) {
  const int64_t next = clock_.load() + 1;
  SendTicks(next, ticked);
  clock_.store(next);
}

void ClientImpl::SendTicks(int64_t clock, const std::set<uint32_t>& skip) {
  std::shared_ptr<const Servers> servers = this->servers();
  const absl::Time give_up = absl::Now() + options_.rpc_deadline;
  for (uint32_t server : servers->alive) {
    if (!skip.contains(server)) ticks_->Send(server, clock, give_up);
  }
}

absl::Status ClientImpl::DrainClocks() {
  return ticks_ == nullptr ? absl::OkStatus() : ticks_->Drain();
}

absl::Status ClientImpl::Lost() const {
  return session_ == nullptr ? absl::OkStatus() : session_->Lost();
}

absl::Status ClientImpl::Finish() {
  if (finished_.exchange(true)) return absl::OkStatus();
  std::shared_ptr<const Servers> servers = this->servers();
  absl::Status first = DrainClocks();
  servers = this->servers();  // a retried tick may have refreshed the map
  for (const auto& [id, channel] : servers->channels) {
    if (!servers->alive.contains(id)) continue;
    v1::ClockRequest request;
    request.set_map_version(servers->router.version());
    request.set_server(id);
    request.set_worker_id(worker_id_);
    request.set_incarnation(incarnation_);
    request.set_clock(clock_.load());
    request.set_leaving(true);
    grpc::Status s;
    // A server still starting (no ready map yet) or failing over answers
    // UNAVAILABLE for a moment: try again within the deadline.
    const absl::Time give_up = absl::Now() + options_.rpc_deadline;
    for (int attempt = 0;; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(give_up));
      v1::ClockResponse response;
      s = ClockAndWait(*channel, &context, request, &response);
      if (s.ok() || !RetriableShardStatus(s) || absl::Now() + kShardRetryBackoff.Delay(attempt) >= give_up) break;
      absl::SleepFor(kShardRetryBackoff.Delay(attempt));
    }
    if (!s.ok() && first.ok()) first = Annotate(FromGrpcStatus(s), absl::StrCat("leave server ", id));
  }
  v1::LeaveRequest leave;
  leave.set_role(v1::MEMBER_ROLE_WORKER);
  leave.set_id(worker_id_);
  leave.set_incarnation(incarnation_);
  leave.set_final_clock(clock_.load());
  absl::Status s = coordinator_->Leave(leave, options_.rpc_deadline);
  if (!s.ok() && first.ok()) first = Annotate(s, "leave coordinator");
  if (session_ != nullptr) session_->Stop();
  const ClientStats stats = Stats();
  const uint64_t keys = stats.cache_hits + stats.cache_misses;
  LOG_INFO(
      "client: {} pulls, mean {:.3f} ms; cache {} hits, {} misses (hit rate {:.4f}), {} bytes; "
      "read staleness mean {:.3f} max {} clocks; left at clock {}",
      stats.pulls, stats.pulls == 0 ? 0.0 : 1e3 * stats.pull_seconds / stats.pulls,
      stats.cache_hits, stats.cache_misses,
      keys == 0 ? 0.0 : static_cast<double>(stats.cache_hits) / static_cast<double>(keys),
      stats.cache_bytes, stats.mean_read_staleness, stats.max_read_staleness, clock_.load());
  if (stats.shared_memory_regions > 0) {
    // Which same-host paths the job took (docs/shared-memory.md).
    LOG_INFO("client: same host: {} requests through {} regions ({:.1f} MB of values), {} of them "
             "in place in lent memory, {} through call slots; {} pulls rode on pushes; {} pushes "
             "sent while written",
             stats.shared_memory_requests, stats.shared_memory_regions,
             static_cast<double>(stats.shared_memory_bytes) / 1e6, stats.shared_memory_in_place,
             stats.slot_calls, stats.pulls_with_push, stats.streamed_pushes);
  }
  return first;
}

}  // namespace cairn
