// A server's ParameterService in memory, in place of the worker client's gRPC
// channel (worker/client/shard_channel.h), for unit tests of the client.
//
// It keeps each table's rows by key and adds pushed values to them (a plain
// sum: no optimizer), applies a push at most once per (worker, incarnation,
// group) sequence with the servers' own SequenceWindow, answers pulls from
// the rows (unpushed rows read as zeros), and answers clocks with the
// smallest clock it was sent. Failures are scripted (FailNext). Answers run
// on the fake's own thread, as gRPC's callbacks run on its threads.
//
// Thread-safe.
#ifndef CAIRN_TESTS_FAKES_FAKE_SHARD_H_
#define CAIRN_TESTS_FAKES_FAKE_SHARD_H_

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.pb.h"
#include "common/bytes.h"
#include "common/partitioning.h"
#include "common/push_payload.h"
#include "common/status_conversion.h"
#include "common/work_queue.h"
#include "server/shard/sequence_window.h"
#include "worker/client/shard_channel.h"

namespace cairn {

class FakeShard final : public ShardChannel {
 public:
  enum class Rpc { kPush, kPull, kClock };

  // `job`: the tables (row lengths) of the job the client registered for.
  // `map_version`: the version this server holds; requests of another
  // version get the servers' stale-map answer.
  FakeShard(uint32_t server_id, v1::JobSpec job, uint64_t map_version)
      : server_id_(server_id), job_(std::move(job)), map_version_(map_version) {
    thread_ = std::thread([this] {
      while (std::optional<std::function<void()>> answer = answers_.Pop()) {
        {
          absl::MutexLock lock(&mu_);
          mu_.Await(absl::Condition(
              +[](bool* held) { return !*held; }, &held_));
        }
        (*answer)();
      }
    });
  }
  ~FakeShard() override {
    HoldAnswers(false);
    answers_.Close();
    thread_.join();
  }

  uint32_t server_id() const { return server_id_; }

  // While held, requests are recorded (pushes(), pulls()) and applied as
  // usual but not answered; releasing answers them in order.
  void HoldAnswers(bool held) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    held_ = held;
  }

  void set_map_version(uint64_t version) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    map_version_ = version;
  }

  // The next `count` calls of `rpc` answer `status`. With `apply_first` (a
  // push), the push is applied before the failure is answered: the request
  // arrived, its answer was lost on the way back.
  void FailNext(Rpc rpc, grpc::Status status, int count = 1, bool apply_first = false)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < count; ++i) failures_[rpc].push_back({status, apply_first});
  }

  // Parses the wire bytes as the server's gRPC stack would, so tests also
  // check what the client's zero-copy serialization produced.
  void Push(grpc::ClientContext*, const std::shared_ptr<const PushPayload>& payload,
            std::shared_ptr<void> pin, v1::PushResponse* response, Done done,
            grpc::CompletionQueue* /*cq: answered on the fake's thread*/) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::ByteBuffer copy = SerializePush(*payload, pin);
    pin.reset();
    auto request = std::make_unique<v1::PushRequest>();
    if (!grpc::SerializationTraits<v1::PushRequest>::Deserialize(&copy, request.get()).ok()) {
      Answer(std::move(done), grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                           "cannot parse the PushRequest"));
      return;
    }
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      pushes_.push_back(*request);
      std::optional<Failure> failure = NextFailureLocked(Rpc::kPush);
      status = CheckMapLocked(request->map_version());
      if (status.ok() && (!failure.has_value() || failure->apply_first)) {
        response->set_duplicate(!ApplyLocked(*request));
        // A tick carried by the push, recorded as the server does once the
        // push is applied (PushRequest.end_clock).
        if (request->end_clock() > 0 && !failure.has_value()) {
          clock_of_[request->worker_id()] = request->end_clock();
          response->set_ticked(true);
        }
      }
      if (failure.has_value()) status = failure->status;
    }
    Answer(std::move(done), status);
  }

  void Pull(grpc::ClientContext*, v1::PullRequest* request, uint64_t /*reply_bytes*/,
            char* /*reply_into*/,
            v1::PullResponse* response, Done done,
            grpc::CompletionQueue* /*cq: answered on the fake's thread*/) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      pulls_.push_back(*request);
      status = StatusLocked(Rpc::kPull, request->map_version());
      if (status.ok()) {
        response->set_min_clock(MinClockLocked());
        for (const v1::TableKeys& t : request->tables()) {
          v1::TableValues* out = response->add_tables();
          out->set_table_id(t.table_id());
          out->set_table(t.table());
          out->set_dtype(v1::DTYPE_FLOAT32);
          for (Key key : DecodeKeys(t.keys())) {
            std::vector<float> row = RowLocked(t.table_id(), key);
            out->mutable_values()->append(reinterpret_cast<const char*>(row.data()),
                                          row.size() * sizeof(float));
          }
        }
      }
    }
    Answer(std::move(done), status);
  }

  void Clock(grpc::ClientContext*, const v1::ClockRequest* request, v1::ClockResponse* response,
             Done done) override ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      clocks_.push_back(*request);
      status = StatusLocked(Rpc::kClock, request->map_version());
      if (status.ok()) {
        clock_of_[request->worker_id()] = request->clock();
        response->set_min_clock(MinClockLocked());
      }
    }
    Answer(std::move(done), status);
  }

  // What this server was sent, in arrival order.
  std::vector<v1::PushRequest> pushes() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return pushes_;
  }
  std::vector<v1::PullRequest> pulls() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return pulls_;
  }
  std::vector<v1::ClockRequest> clocks() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return clocks_;
  }
  // Pushes applied, and pushes answered as duplicates.
  int applied() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return applied_;
  }
  int duplicates() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return duplicates_;
  }
  // The sum of every value pushed to row `key` of table `table_id`; empty
  // when nothing was.
  std::vector<float> Row(uint32_t table_id, Key key) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = rows_.find({table_id, key});
    return it == rows_.end() ? std::vector<float>() : it->second;
  }
  // Keys of table `table_id` with pushed values, ascending.
  std::vector<Key> Keys(uint32_t table_id) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<Key> keys;
    for (const auto& [id, row] : rows_) {
      if (id.first == table_id) keys.push_back(id.second);
    }
    return keys;
  }

  static std::vector<Key> DecodeKeys(const std::string& bytes) {
    std::vector<Key> keys(bytes.size() / sizeof(Key));
    std::memcpy(keys.data(), bytes.data(), keys.size() * sizeof(Key));
    return keys;
  }

 private:
  struct Failure {
    grpc::Status status;
    bool apply_first = false;
  };

  void Answer(Done done, grpc::Status status) {
    answers_.Push([done = std::move(done), status = std::move(status)] { done(status); });
  }

  std::optional<Failure> NextFailureLocked(Rpc rpc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::deque<Failure>& queue = failures_[rpc];
    if (queue.empty()) return std::nullopt;
    Failure f = queue.front();
    queue.pop_front();
    return f;
  }

  // A read's answer: the next scripted failure, else the map check.
  grpc::Status StatusLocked(Rpc rpc, uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::optional<Failure> failure = NextFailureLocked(rpc);
    return failure.has_value() ? failure->status : CheckMapLocked(version);
  }

  grpc::Status CheckMapLocked(uint64_t version) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (version == map_version_) return grpc::Status::OK;
    return StaleMapStatus(version, map_version_);
  }

  int64_t MinClockLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t min = 0;
    bool any = false;
    for (const auto& [worker, clock] : clock_of_) {
      min = any ? std::min(min, clock) : clock;
      any = true;
    }
    return min;
  }

  // Floats of row `key`: a sparse table's width, a dense chunk's length.
  size_t RowLength(uint32_t table_id, Key key) const {
    const v1::TableSpec& t = job_.tables(static_cast<int>(table_id));
    if (t.kind() == v1::TABLE_KIND_SPARSE) return static_cast<size_t>(t.width());
    const uint64_t n = DenseNumElements(t);
    const uint64_t chunk = static_cast<uint64_t>(t.chunk_size());
    return static_cast<size_t>(std::min(chunk, n - key * chunk));
  }

  std::vector<float> RowLocked(uint32_t table_id, Key key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = rows_.find({table_id, key});
    if (it != rows_.end()) return it->second;
    return std::vector<float>(RowLength(table_id, key), 0.0f);
  }

  // False when the push was applied before (a duplicate).
  bool ApplyLocked(const v1::PushRequest& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SequenceWindow& window = windows_[{r.group(), r.worker_id(), r.incarnation()}];
    if (!window.Insert(r.sequence())) {
      ++duplicates_;
      return false;
    }
    ++applied_;
    for (const v1::TableValues& t : r.tables()) {
      const char* values = t.values().data();
      for (Key key : DecodeKeys(t.keys())) {
        std::vector<float>& row = rows_[{t.table_id(), key}];
        row.resize(RowLength(t.table_id(), key), 0.0f);
        for (float& v : row) {
          float g;
          std::memcpy(&g, values, sizeof(g));
          values += sizeof(g);
          v += g;
        }
      }
    }
    return true;
  }

  const uint32_t server_id_;
  const v1::JobSpec job_;

  mutable absl::Mutex mu_;
  uint64_t map_version_ ABSL_GUARDED_BY(mu_);
  std::map<Rpc, std::deque<Failure>> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::PushRequest> pushes_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::PullRequest> pulls_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ClockRequest> clocks_ ABSL_GUARDED_BY(mu_);
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, SequenceWindow> windows_
      ABSL_GUARDED_BY(mu_);
  std::map<std::pair<uint32_t, Key>, std::vector<float>> rows_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, int64_t> clock_of_ ABSL_GUARDED_BY(mu_);
  int applied_ ABSL_GUARDED_BY(mu_) = 0;
  int duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  bool held_ ABSL_GUARDED_BY(mu_) = false;

  WorkQueue<std::function<void()>> answers_;
  std::thread thread_;
};

}  // namespace cairn

#endif  // CAIRN_TESTS_FAKES_FAKE_SHARD_H_
