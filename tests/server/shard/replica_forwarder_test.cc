// A primary's copies to its backups (server/shard/rpc/replica_forwarder.h):
// what a backup receives is the push, marked forwarded, stamped with the
// primary's map version, without the worker's tick, its values inline
// whether they came inline or through a worker's shared region; the
// primary hears back once every backup answered and gRPC let go of the
// memory the values were sent from.
#include "server/shard/rpc/replica_forwarder.h"

#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/bytes.h"
#include "common/completion_loop.h"
#include "common/grpc_util.h"
#include "google/protobuf/util/message_differencer.h"

namespace cairn {
namespace {

using google::protobuf::util::MessageDifferencer;

// A backup that records what it is sent and answers `answer`.
class RecordingBackup final : public v1::ParameterService::CallbackService {
 public:
  explicit RecordingBackup(grpc::Status answer) : answer_(std::move(answer)) {}

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context,
                                 const v1::PushRequest* request,
                                 v1::PushResponse* /*response*/) override {
    {
      absl::MutexLock lock(&mu_);
      received_.push_back(*request);
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(answer_);
    return reactor;
  }

  std::vector<v1::PushRequest> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }

 private:
  const grpc::Status answer_;
  absl::Mutex mu_;
  std::vector<v1::PushRequest> received_ ABSL_GUARDED_BY(mu_);
};

struct Backup {
  std::unique_ptr<RecordingBackup> service;
  StartedServer server;
  std::string address;
};

Backup StartBackup(grpc::Status answer = grpc::Status::OK) {
  Backup b;
  b.service = std::make_unique<RecordingBackup>(std::move(answer));
  absl::StatusOr<StartedServer> started =
      StartGrpcServer(GrpcServerOptions{"127.0.0.1:0", 64 << 20, {b.service.get()}});
  REQUIRE(started.ok());
  b.server = *std::move(started);
  b.address = "127.0.0.1:" + std::to_string(b.server.port);
  return b;
}

// A worker's push of two tables: `w` with 100,000 values (several slices on
// the wire), `b` with values in a shared region (here, `region_bytes`).
v1::PushRequest WorkerPush() {
  v1::PushRequest r;
  r.set_map_version(3);
  r.set_worker_id(1);
  r.set_sequence(9);
  r.set_clock(4);
  r.set_group(2);
  r.set_incarnation(5);
  r.set_end_clock(5);
  v1::TableValues* w = r.add_tables();
  w->set_table_id(0);
  w->set_table("w");
  w->set_keys(KeysToBytes({0, 1, 2, 3}));
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  w->set_values(FloatsToBytes(values));
  w->add_shape(100000);
  w->set_dtype(v1::DTYPE_FLOAT32);
  v1::TableValues* b = r.add_tables();
  b->set_table_id(1);
  b->set_table("b");
  b->set_keys(KeysToBytes({0}));
  b->add_shape(3);
  b->set_dtype(v1::DTYPE_FLOAT32);
  b->mutable_shared()->set_region(7);
  b->mutable_shared()->set_offset(64);
  b->mutable_shared()->set_length(12);
  return r;
}

// What the backups must get from WorkerPush at map version 6.
v1::PushRequest Forwarded(const std::string& region_bytes) {
  v1::PushRequest r = WorkerPush();
  r.set_forwarded(true);
  r.clear_end_clock();
  r.set_map_version(6);
  r.mutable_tables(1)->clear_shared();
  r.mutable_tables(1)->set_values(region_bytes);
  return r;
}

TEST_CASE("a forwarded copy is the push, marked, stamped, without the tick, values inline",
          "[replica_forwarder]") {
  const v1::PushRequest push = WorkerPush();
  const std::string region_bytes = FloatsToBytes({1.5f, -2.0f, 4.0f});
  std::vector<ValuePieces> values = {OnePiece(push.tables(0).values()), OnePiece(region_bytes)};
  CHECK(MessageDifferencer::Equals(ReplicaForwarder::Copy(push, values, 6)->ToProto(),
                                   Forwarded(region_bytes)));
  // No views given: each table's own values.
  v1::PushRequest inline_push = push;
  inline_push.mutable_tables(1)->clear_shared();
  inline_push.mutable_tables(1)->set_values(region_bytes);
  CHECK(MessageDifferencer::Equals(ReplicaForwarder::Copy(inline_push, {}, 6)->ToProto(),
                                   Forwarded(region_bytes)));
  // Nothing copied: the ranges are the memory given.
  auto copy = ReplicaForwarder::Copy(push, values, 6);
  REQUIRE(copy->tables[0].values.size() == 1);
  CHECK(copy->tables[0].values[0].data() == push.tables(0).values().data());
  CHECK(copy->tables[1].values[0].data() == region_bytes.data());
}

TEST_CASE("every backup gets the copy, and done comes once all answered and the memory is let go",
          "[replica_forwarder]") {
  Backup one = StartBackup();
  Backup two = StartBackup();
  CompletionLoop loop;
  loop.Start();
  ReplicaForwarder forwarder(&loop, 64 << 20, absl::Seconds(10), absl::Seconds(10));
  const v1::PushRequest push = WorkerPush();
  const std::string region_bytes = FloatsToBytes({1.5f, -2.0f, 4.0f});
  std::vector<ValuePieces> values = {OnePiece(push.tables(0).values()), OnePiece(region_bytes)};
  auto owner = std::make_shared<int>(0);
  std::weak_ptr<int> owner_seen = owner;
  std::promise<std::pair<absl::Status, bool>> done;
  forwarder.Forward(ReplicaForwarder::Copy(push, values, 6), std::move(owner),
                    {{1, one.address}, {2, two.address}}, [&](absl::Status s) {
                      done.set_value({s, owner_seen.expired()});
                    });
  const auto [status, released] = done.get_future().get();
  CHECK(status.ok());
  CHECK(released);  // nothing holds the memory the values were sent from
  for (Backup* b : {&one, &two}) {
    const std::vector<v1::PushRequest> got = b->service->received();
    REQUIRE(got.size() == 1);
    CHECK(MessageDifferencer::Equals(got[0], Forwarded(region_bytes)));
  }
}

TEST_CASE("a backup that refuses, or is not there, fails the push as unavailable, naming it",
          "[replica_forwarder]") {
  Backup good = StartBackup();
  Backup refusing = StartBackup(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                             "map version 6 is older than 7"));
  CompletionLoop loop;
  loop.Start();
  ReplicaForwarder forwarder(&loop, 64 << 20, absl::Seconds(5), absl::Seconds(5));
  const v1::PushRequest push = WorkerPush();
  const std::string region_bytes = FloatsToBytes({1.5f, -2.0f, 4.0f});
  std::vector<ValuePieces> values = {OnePiece(push.tables(0).values()), OnePiece(region_bytes)};
  for (const std::vector<Shard::Replica>& to :
       {std::vector<Shard::Replica>{{1, good.address}, {3, refusing.address}},
        std::vector<Shard::Replica>{{1, good.address}, {3, ""}}}) {
    std::promise<absl::Status> done;
    forwarder.Forward(ReplicaForwarder::Copy(push, values, 6), nullptr, to,
                      [&](absl::Status s) { done.set_value(s); });
    const absl::Status s = done.get_future().get();
    CHECK(s.code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(s.message()), Catch::Contains("backup server 3"));
  }
  CHECK(refusing.service->received().size() == 1);
  CHECK(good.service->received().size() == 2);
}

}  // namespace
}  // namespace cairn
