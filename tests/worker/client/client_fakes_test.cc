// The worker client's plumbing against fakes (tests/fakes/): the request
// router, the push sequence numbers the servers' de-duplication window keys
// on, and the conversion of server answers into what the caller sees, with
// no process, socket or daemon. The same behaviours end to end, against real
// servers, are in tests/integration/ (push_retry_test, failover tests).
#include <catch2/catch.hpp>

#include <grpcpp/support/status.h>

#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/partitioning.h"
#include "common/status_conversion.h"
#include "tests/fakes/fake_coordinator.h"
#include "tests/fakes/fake_shard.h"
#include "worker/client/client_impl.h"
#include "worker/client/router.h"

namespace cairn {
namespace {

constexpr uint32_t kPartitions = 4;
constexpr uint32_t kSparse = 0;  // table ids
constexpr uint32_t kDense = 1;

v1::JobSpec Job(int64_t request_split_bytes = 1 << 20) {
  v1::JobSpec job;
  v1::TableSpec* emb = job.add_tables();
  emb->set_id(kSparse);
  emb->set_name("emb");
  emb->set_kind(v1::TABLE_KIND_SPARSE);
  emb->set_width(2);
  emb->set_consistency(v1::CONSISTENCY_ASP);
  v1::TableSpec* w = job.add_tables();
  w->set_id(kDense);
  w->set_name("w");
  w->set_kind(v1::TABLE_KIND_DENSE);
  w->add_shape(10);
  w->set_chunk_size(4);  // chunks of 4, 4 and 2 floats
  w->set_consistency(v1::CONSISTENCY_ASP);
  job.set_num_partitions(kPartitions);
  job.set_num_workers(1);
  job.set_num_servers(2);
  job.set_max_message_bytes(1 << 20);
  job.set_request_split_bytes(request_split_bytes);
  job.set_pull_deadline_ms(5000);
  job.set_lease_timeout_ms(2000);
  job.set_heartbeat_interval_ms(500);
  job.set_replication(1);
  return job;
}

// Partitions 0 and 1 are replica group 0, 2 and 3 group 1; `primary_of[g]`
// is group g's primary.
v1::PartitionMap Map(uint64_t version, std::vector<uint32_t> primary_of) {
  v1::PartitionMap map;
  map.set_version(version);
  map.set_num_partitions(kPartitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_group(p / 2);
    a->set_primary(primary_of[p / 2]);
  }
  for (uint32_t s = 0; s < 2; ++s) {
    v1::Member* m = map.add_servers();
    m->set_id(s);
    m->set_role(v1::MEMBER_ROLE_SERVER);
    m->set_state(v1::MEMBER_STATE_ALIVE);
    m->set_address(absl::StrCat("server-", s));
  }
  v1::Member* w = map.add_workers();
  w->set_id(0);
  w->set_role(v1::MEMBER_ROLE_WORKER);
  w->set_state(v1::MEMBER_STATE_ALIVE);
  w->set_incarnation(1);
  return map;
}

// One client connected to two fake servers through a fake coordinator.
struct Rig {
  explicit Rig(int push_attempts = 3, bool heartbeat = false, int requests_in_flight = 4,
               int64_t request_split_bytes = 1 << 20) {
    const v1::JobSpec job = Job(request_split_bytes);
    shards["server-0"] = std::make_shared<FakeShard>(0, job, 1);
    shards["server-1"] = std::make_shared<FakeShard>(1, job, 1);
    auto fake = std::make_unique<FakeCoordinator>(job, Map(1, {0, 1}));
    coordinator = fake.get();
    ClientOptions options;
    options.worker_id = 0;
    options.heartbeat = heartbeat;
    options.cache_bytes = 0;
    options.connect_timeout = absl::Seconds(5);
    options.rpc_deadline = absl::Seconds(5);
    options.push_attempts = push_attempts;
    options.requests_in_flight = requests_in_flight;
    client = std::make_unique<ClientImpl>(
        options, std::move(fake), [this](const std::string& address) {
          std::shared_ptr<ShardChannel> channel = shards.at(address);
          return channel;
        });
    const absl::Status started = client->Start();
    REQUIRE(started.ok());
  }
  FakeShard& shard(uint32_t id) { return *shards.at(absl::StrCat("server-", id)); }

  std::map<std::string, std::shared_ptr<FakeShard>> shards;
  FakeCoordinator* coordinator = nullptr;
  std::unique_ptr<ClientImpl> client;
};

std::vector<float> Grads(const std::vector<Key>& keys) {
  std::vector<float> g;
  for (Key k : keys) {
    g.push_back(static_cast<float>(k));
    g.push_back(static_cast<float>(k) + 0.5f);
  }
  return g;
}

// Keys whose partitions belong to replica group `group`.
std::vector<Key> KeysOfGroup(uint32_t group, size_t n) {
  std::vector<Key> keys;
  for (Key k = 0; keys.size() < n; ++k) {
    if (SparsePartition(k, kPartitions) / 2 == group) keys.push_back(k);
  }
  return keys;
}

TEST_CASE("the router sends each sparse key and dense chunk to its group's primary only",
          "[client][router]") {
  Rig rig;
  std::vector<Key> keys(40);
  std::iota(keys.begin(), keys.end(), Key{0});
  const std::vector<float> grads = Grads(keys);
  REQUIRE(rig.client->PushSparse("emb", keys, grads).get().ok());
  std::vector<float> dense(10);
  std::iota(dense.begin(), dense.end(), 1.0f);
  REQUIRE(rig.client->PushDense({ConstDenseBuffer{"w", dense}}).get().ok());

  for (Key k : keys) {
    const uint32_t owner = SparsePartition(k, kPartitions) / 2;  // group g's primary is g
    INFO("key " << k << ", partition " << SparsePartition(k, kPartitions));
    CHECK(rig.shard(owner).Row(kSparse, k) ==
          std::vector<float>{static_cast<float>(k), static_cast<float>(k) + 0.5f});
    CHECK(rig.shard(1 - owner).Row(kSparse, k).empty());
  }
  // Dense chunks by range: 3 chunks over 4 partitions -> partition 0 owns
  // none, chunk 0 is in partition 1, chunk 1 in 2, chunk 2 in 3.
  for (Key c = 0; c < 3; ++c) {
    const uint32_t owner = DensePartition(c, 3, kPartitions) / 2;
    INFO("chunk " << c);
    const std::vector<float> want(dense.begin() + 4 * c, dense.begin() + std::min<Key>(10, 4 * c + 4));
    CHECK(rig.shard(owner).Row(kDense, c) == want);
    CHECK(rig.shard(1 - owner).Row(kDense, c).empty());
  }
  // A request never mixes groups; each group's pushes are numbered 1, 2, ...
  for (uint32_t s = 0; s < 2; ++s) {
    std::vector<uint64_t> sequences;
    for (const v1::PushRequest& r : rig.shard(s).pushes()) {
      CHECK(r.group() == s);
      CHECK(r.worker_id() == 0);
      CHECK(r.incarnation() == 1);
      CHECK(r.map_version() == 1);
      sequences.push_back(r.sequence());
    }
    CHECK(sequences == std::vector<uint64_t>{1, 2});
  }
  // A pull reads back what was pushed, from the same servers.
  std::vector<float> pulled(keys.size() * 2);
  REQUIRE(rig.client->PullSparse("emb", keys, absl::MakeSpan(pulled)).get().ok());
  CHECK(pulled == grads);
}

TEST_CASE("Router::Create refuses a map with a partition missing or a group with two primaries",
          "[client][router]") {
  v1::PartitionMap missing = Map(3, {0, 1});
  missing.mutable_assignments()->RemoveLast();
  absl::StatusOr<Router> r = Router::Create(missing);
  REQUIRE(absl::IsInvalidArgument(r.status()));
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("partition map version 3 assigns 3 of 4 partitions"));

  v1::PartitionMap split = Map(4, {0, 1});
  split.mutable_assignments(1)->set_primary(1);  // group 0: partition 0 on 0, 1 on 1
  r = Router::Create(split);
  REQUIRE(absl::IsInvalidArgument(r.status()));
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("gives replica group 0 two primaries (0 and 1)"));

  r = Router::Create(Map(5, {1, 0}));
  REQUIRE(r.ok());
  CHECK(r->GroupPrimary(0) == 1);
  CHECK(r->Primary(3) == 0);
  CHECK(r->Servers() == std::vector<uint32_t>{0, 1});
  const std::map<uint32_t, std::vector<Key>> dense = r->RouteDense(3);
  CHECK(dense.at(0) == std::vector<Key>{0});  // partition 1 (partition 0 owns no chunk)
  CHECK(dense.at(1) == std::vector<Key>{1, 2});  // partitions 2 and 3
}

TEST_CASE("a push whose answer was lost is sent again with its sequence and applied once",
          "[client][dedup]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 5);
  rig.shard(0).FailNext(FakeShard::Rpc::kPush,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline"), 1,
                        /*apply_first=*/true);
  REQUIRE(rig.client->PushSparse("emb", keys, Grads(keys)).get().ok());

  const std::vector<v1::PushRequest> sent = rig.shard(0).pushes();
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].sequence() == 1);
  CHECK(sent[1].sequence() == 1);
  CHECK(sent[1].tables(0).values() == sent[0].tables(0).values());
  CHECK(rig.shard(0).applied() == 1);
  CHECK(rig.shard(0).duplicates() == 1);
  for (Key k : keys) {
    CHECK(rig.shard(0).Row(kSparse, k) ==
          std::vector<float>{static_cast<float>(k), static_cast<float>(k) + 0.5f});
  }
  // The next push is a new one.
  REQUIRE(rig.client->PushSparse("emb", keys, Grads(keys)).get().ok());
  CHECK(rig.shard(0).pushes().back().sequence() == 2);
  CHECK(rig.shard(0).applied() == 2);
}

TEST_CASE("a push that times out on every attempt fails saying it may have been applied",
          "[client][dedup]") {
  Rig rig(/*push_attempts=*/2);
  const std::vector<Key> keys = KeysOfGroup(1, 3);
  rig.shard(1).FailNext(FakeShard::Rpc::kPush,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline"), 2);
  const absl::Status s = rig.client->PushSparse("emb", keys, Grads(keys)).get();
  REQUIRE(absl::IsDeadlineExceeded(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("push to server 1 (replica group 1, sequence 1): 2 attempts timed "
                             "out; it may have been applied (once) or not"));
  CHECK(rig.shard(1).pushes().size() == 2);
  CHECK(rig.shard(1).applied() == 0);
}

TEST_CASE("a pull that timed out reads again, and fails naming its attempts once all timed out",
          "[client][status]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 3);
  REQUIRE(rig.client->PushSparse("emb", keys, Grads(keys)).get().ok());
  std::vector<float> out(keys.size() * 2, -1.0f);
  rig.shard(0).FailNext(FakeShard::Rpc::kPull,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline"), 2);
  REQUIRE(rig.client->PullSparse("emb", keys, absl::MakeSpan(out)).get().ok());
  CHECK(rig.shard(0).pulls().size() == 3);  // two timed out, the third answered
  for (size_t i = 0; i < keys.size(); ++i) {
    CHECK(std::vector<float>(out.begin() + 2 * i, out.begin() + 2 * i + 2) ==
          rig.shard(0).Row(kSparse, keys[i]));
  }

  rig.shard(0).FailNext(FakeShard::Rpc::kPull,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline"), 3);
  const absl::Status s = rig.client->PullSparse("emb", keys, absl::MakeSpan(out)).get();
  REQUIRE(absl::IsDeadlineExceeded(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("pull from server 0: 3 attempts timed out"));
  CHECK(rig.shard(0).pulls().size() == 6);
}

TEST_CASE("a stale-map answer refreshes the map and the push goes to the group's new primary "
          "with its sequence",
          "[client][router][dedup]") {
  Rig rig;
  // Group 0 fails over to server 1 (map version 2); the client still has 1.
  rig.coordinator->SetMap(Map(2, {1, 1}));
  rig.shard(0).set_map_version(2);
  rig.shard(1).set_map_version(2);
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  REQUIRE(rig.client->PushSparse("emb", keys, Grads(keys)).get().ok());

  CHECK(rig.coordinator->map_reads() >= 1);
  REQUIRE(rig.shard(0).pushes().size() == 1);
  CHECK(rig.shard(0).pushes()[0].map_version() == 1);
  CHECK(rig.shard(0).applied() == 0);
  REQUIRE(rig.shard(1).pushes().size() == 1);
  const v1::PushRequest& moved = rig.shard(1).pushes()[0];
  CHECK(moved.group() == 0);
  CHECK(moved.sequence() == 1);  // the same push, not a new one
  CHECK(moved.map_version() == 2);
  for (Key k : keys) CHECK(rig.shard(1).Row(kSparse, k).size() == 2);
}

TEST_CASE("server answers reach the caller with their code: refusals at once, UNAVAILABLE "
          "retried",
          "[client][status]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 2);
  std::vector<float> out(keys.size() * 2);

  rig.shard(0).FailNext(FakeShard::Rpc::kPull,
                        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                     "table emb: key 7 shape [3] differs from [2]"));
  absl::Status s = rig.client->PullSparse("emb", keys, absl::MakeSpan(out)).get();
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("pull to server 0"));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("table emb: key 7 shape [3] differs from [2]"));
  CHECK(rig.shard(0).pulls().size() == 1);  // not retried

  rig.shard(0).FailNext(FakeShard::Rpc::kPull,
                        grpc::Status(grpc::StatusCode::UNAVAILABLE, "failing over"));
  REQUIRE(rig.client->PullSparse("emb", keys, absl::MakeSpan(out)).get().ok());
  CHECK(rig.shard(0).pulls().size() == 3);  // the refused one, the unavailable one, the retry

  rig.shard(1).FailNext(FakeShard::Rpc::kPush,
                        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                     "worker 0 incarnation 1 refused: the worker registered "
                                     "again since (incarnation 2)"));
  const std::vector<Key> other = KeysOfGroup(1, 1);
  s = rig.client->PushSparse("emb", other, Grads(other)).get();
  REQUIRE(absl::IsFailedPrecondition(s));
  CHECK_FALSE(StaleMapVersion(s).has_value());  // a refusal, not a map to refresh
  CHECK_THAT(std::string(s.message()), Catch::Contains("registered again since"));
  CHECK(rig.shard(1).pushes().size() == 1);
}

TEST_CASE("clock ticks reach every live server and Finish leaves servers and coordinator",
          "[client]") {
  Rig rig;
  REQUIRE(rig.client->Clock().ok());
  REQUIRE(rig.client->Clock().ok());
  REQUIRE(rig.client->Finish().ok());
  for (uint32_t s = 0; s < 2; ++s) {
    // The registration found the barrier passed (the fake's map is ready), so
    // the client first asked each server's minimum clock (a tick at 0).
    const std::vector<v1::ClockRequest> ticks = rig.shard(s).clocks();
    REQUIRE(ticks.size() == 4);
    CHECK(ticks[0].clock() == 0);
    CHECK(ticks[1].clock() == 1);
    CHECK(ticks[2].clock() == 2);
    CHECK(ticks[3].leaving());
    for (const v1::ClockRequest& t : ticks) CHECK(t.incarnation() == 1);
  }
  REQUIRE(rig.coordinator->leaves().size() == 1);
  CHECK(rig.coordinator->leaves()[0].final_clock() == 2);
}

TEST_CASE("a slow answer to the map fetch a heartbeat asks for does not hold the heartbeats",
          "[client]") {
  // Heartbeats every 500 ms, a 2 s lease (Job()). A newer map is published
  // and the coordinator takes 4 s to hand it out: the fetch runs beside the
  // heartbeats, which go on. Fetched on the heartbeat thread, it held them
  // for the 4 s, past the lease.
  Rig rig(/*push_attempts=*/3, /*heartbeat=*/true);
  rig.coordinator->DelayMapReads(absl::Seconds(4));
  rig.coordinator->SetMap(Map(2, {1, 0}));
  absl::SleepFor(absl::Milliseconds(700));  // a heartbeat sees version 2
  const int before = rig.coordinator->heartbeats();
  absl::SleepFor(absl::Seconds(3));
  const int during = rig.coordinator->heartbeats() - before;
  INFO(during << " heartbeats in the 3 s of the slow fetch");
  CHECK(during >= 3);
  CHECK(rig.coordinator->map_reads() >= 1);
  rig.coordinator->DelayMapReads(absl::ZeroDuration());
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// The fake answers on a thread of its own, so each result reaches a caller
// waiting on its own queue from another thread (the alarm that wakes it);
// retries run on the client's executor.
TEST_CASE("PushAndWait and PullAndWait give what the future forms give: values, a retried "
          "push applied once, a stale map followed, errors named",
          "[client][wait]") {
  Rig rig;
  const std::vector<Key> keys0 = KeysOfGroup(0, 3);
  const std::vector<Key> keys1 = KeysOfGroup(1, 2);
  const std::vector<float> dense = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

  // An answer lost after the push landed: sent again, applied once.
  rig.shard(0).FailNext(FakeShard::Rpc::kPush,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline"), 1,
                        /*apply_first=*/true);
  const std::vector<float> g0 = Grads(keys0), g1 = Grads(keys1);
  REQUIRE(rig.client->PushAndWait({{"w", dense}}, {{"emb", keys0, g0}, {"emb", keys1, g1}}).ok());
  CHECK(rig.shard(0).duplicates() == 1);
  for (Key k : keys0) {
    CHECK(rig.shard(0).Row(kSparse, k) ==
          std::vector<float>{static_cast<float>(k), static_cast<float>(k) + 0.5f});
  }

  std::vector<float> rows0(keys0.size() * 2), rows1(keys1.size() * 2), w(dense.size());
  REQUIRE(rig.client
              ->PullAndWait({{"w", absl::MakeSpan(w)}},
                            {{"emb", keys0, absl::MakeSpan(rows0)},
                             {"emb", keys1, absl::MakeSpan(rows1)}})
              .ok());
  CHECK(rows0 == g0);
  CHECK(rows1 == g1);
  std::vector<float> w_future(dense.size());
  REQUIRE(rig.client->PullDense({{"w", absl::MakeSpan(w_future)}}).get().ok());
  CHECK(w == w_future);

  // Group 0 moves to server 1: the push follows the new map.
  rig.coordinator->SetMap(Map(2, {1, 1}));
  rig.shard(0).set_map_version(2);
  rig.shard(1).set_map_version(2);
  const size_t before = rig.shard(1).pushes().size();
  REQUIRE(rig.client->PushAndWait({}, {{"emb", keys0, g0}}).ok());
  REQUIRE(rig.shard(1).pushes().size() == before + 1);
  CHECK(rig.shard(1).pushes().back().group() == 0);
  CHECK(rig.shard(1).pushes().back().map_version() == 2);

  // A refusal reaches the caller with its code and the server named.
  rig.shard(1).FailNext(FakeShard::Rpc::kPull,
                        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "table emb: bad key"));
  const absl::Status s = rig.client->PullAndWait({}, {{"emb", keys1, absl::MakeSpan(rows1)}});
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("pull to server 1"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("table emb: bad key"));

  // Bad input fails before anything is sent, naming the table.
  const absl::Status bad = rig.client->PushAndWait({{"w", absl::MakeConstSpan(g1)}}, {});
  REQUIRE(absl::IsInvalidArgument(bad));
  CHECK_THAT(std::string(bad.message()), Catch::Contains("table=w"));
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// 6,144 rows of width 2 at 4 KiB per request: 12 requests to server 0.
TEST_CASE("a push cut in many requests keeps requests_in_flight of them in flight per server, "
          "and all arrive once",
          "[client][window]") {
  const std::vector<Key> keys = KeysOfGroup(0, 6144);
  const std::vector<float> grads = Grads(keys);
  for (const auto& [window, first] : std::vector<std::pair<int, size_t>>{{4, 4}, {0, 12}}) {
    INFO("requests_in_flight " << window);
    Rig rig(3, false, window, /*request_split_bytes=*/4096);
    rig.shard(0).HoldAnswers(true);
    std::future<absl::Status> pushed = rig.client->PushSparse("emb", keys, grads);
    // Unanswered, the server sees the window's first requests only.
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (rig.shard(0).pushes().size() < first && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    absl::SleepFor(absl::Milliseconds(200));
    CHECK(rig.shard(0).pushes().size() == first);
    rig.shard(0).HoldAnswers(false);
    REQUIRE(pushed.get().ok());
    const std::vector<v1::PushRequest> sent = rig.shard(0).pushes();
    CHECK(sent.size() == 12);
    CHECK(rig.shard(0).applied() == 12);
    CHECK(rig.shard(0).duplicates() == 0);
    for (size_t i = 0; i < sent.size(); ++i) CHECK(sent[i].sequence() == i + 1);
    for (Key k : {keys.front(), keys[keys.size() / 2], keys.back()}) {
      CHECK(rig.shard(0).Row(kSparse, k) ==
            std::vector<float>{static_cast<float>(k), static_cast<float>(k) + 0.5f});
    }
  }
}

// The ticks each server was sent after the join (ClockRequest.clock, the
// leave as -1), and the end_clock of each push it was sent.
std::vector<int64_t> Ticks(FakeShard& shard) {
  std::vector<int64_t> ticks;
  const std::vector<v1::ClockRequest> clocks = shard.clocks();
  for (size_t i = 1; i < clocks.size(); ++i) {
    ticks.push_back(clocks[i].leaving() ? -1 : clocks[i].clock());
  }
  return ticks;
}
std::vector<int64_t> EndClocks(FakeShard& shard) {
  std::vector<int64_t> ends;
  for (const v1::PushRequest& r : shard.pushes()) ends.push_back(r.end_clock());
  return ends;
}

TEST_CASE("PushAndClock carries the tick on a push of one request, and the other servers get "
          "it as a ClockRequest",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 8);  // all on server 0
  const std::vector<float> grads = Grads(keys);
  REQUIRE(rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, grads}}).ok());
  CHECK(rig.client->clock() == 1);
  REQUIRE(rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, grads}}).ok());
  CHECK(rig.client->clock() == 2);
  REQUIRE(rig.client->Finish().ok());

  CHECK(EndClocks(rig.shard(0)) == std::vector<int64_t>{1, 2});
  CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{-1});  // no ClockRequest but the leave
  CHECK(EndClocks(rig.shard(1)).empty());
  CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, 2, -1});
  CHECK(rig.shard(0).Row(kSparse, keys[0]) ==
        std::vector<float>{2.0f * static_cast<float>(keys[0]),
                           2.0f * (static_cast<float>(keys[0]) + 0.5f)});
}

TEST_CASE("PushAndClock sends no tick on a push of several requests", "[client][clock]") {
  // A tick recorded with one request could let a server's barrier pass
  // before another request, or a backup's copy of it, is applied there.
  SECTION("cut in two requests to one server") {
    Rig rig(3, false, 4, /*request_split_bytes=*/4096);
    const std::vector<Key> keys = KeysOfGroup(0, 1024);  // 8 KiB of rows
    const std::vector<float> grads = Grads(keys);
    REQUIRE(rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, grads}}).ok());
    REQUIRE(rig.client->Finish().ok());
    CHECK(EndClocks(rig.shard(0)) == std::vector<int64_t>{0, 0});
    CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{1, -1});
    CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, -1});
  }
  SECTION("one request to each of two servers") {
    Rig rig;
    std::vector<Key> keys = KeysOfGroup(0, 2);
    for (Key k : KeysOfGroup(1, 2)) keys.push_back(k);
    const std::vector<float> grads = Grads(keys);
    REQUIRE(rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, grads}}).ok());
    REQUIRE(rig.client->Finish().ok());
    for (uint32_t s = 0; s < 2; ++s) {
      INFO("server " << s);
      CHECK(EndClocks(rig.shard(s)) == std::vector<int64_t>{0});
      CHECK(Ticks(rig.shard(s)) == std::vector<int64_t>{1, -1});
    }
  }
}

TEST_CASE("a PushAndClock request sent again goes without its tick, which follows as a "
          "ClockRequest",
          "[client][clock]") {
  Rig rig;
  // The first send is applied, its answer lost: it is resent, maybe to
  // another server after a failover, so without the tick.
  rig.shard(0).FailNext(FakeShard::Rpc::kPush,
                        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "answer lost"), 1,
                        /*apply_first=*/true);
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<float> grads = Grads(keys);
  REQUIRE(rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, grads}}).ok());
  REQUIRE(rig.client->Finish().ok());
  CHECK(EndClocks(rig.shard(0)) == std::vector<int64_t>{1, 0});
  CHECK(rig.shard(0).applied() == 1);
  CHECK(rig.shard(0).duplicates() == 1);
  CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{1, -1});
  CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, -1});
}

TEST_CASE("a PushAndClock refused on this side sends nothing and does not end the iteration",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<float> short_grads(3);
  const absl::Status s = rig.client->PushAndClock({}, {ConstSparseRows{"emb", keys, short_grads}});
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK(rig.client->clock() == 0);
  REQUIRE(rig.client->Finish().ok());
  CHECK(rig.shard(0).pushes().empty());
  CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{-1});
}

// PushClockAndPull of `grads` for `keys` of "emb", pulling the same rows
// of the next iteration into `next`.
absl::Status PushClockAndPullRows(Rig& rig, const std::vector<Key>& keys,
                                  const std::vector<float>& grads, absl::Span<float> next,
                                  absl::Status* pulled) {
  return rig.client->PushClockAndPull({}, {ConstSparseRows{"emb", keys, grads}}, {},
                                      {SparseRows{"emb", keys, next}}, pulled);
}

TEST_CASE("PushClockAndPull sends the next iteration's pull with the push, marked ahead of the "
          "tick",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 8);  // all on server 0
  const std::vector<float> grads = Grads(keys);
  std::vector<float> next(keys.size() * 2);
  absl::Status pulled;
  REQUIRE(PushClockAndPullRows(rig, keys, grads, absl::MakeSpan(next), &pulled).ok());
  REQUIRE(pulled.ok());
  CHECK(rig.client->clock() == 1);
  REQUIRE(rig.client->Finish().ok());
  const std::vector<v1::PullRequest> pulls = rig.shard(0).pulls();
  REQUIRE(pulls.size() == 1);
  CHECK(pulls[0].after_tick());  // the server holds it for the tick, which it does not give
  CHECK(pulls[0].clock() == 1);
  CHECK(EndClocks(rig.shard(0)) == std::vector<int64_t>{1});
  CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, -1});
  CHECK(rig.shard(1).pulls().empty());
}

// Keys of both replica groups: the push is a request to each server.
std::vector<Key> KeysOfBothGroups() {
  std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<Key> second = KeysOfGroup(1, 4);
  keys.insert(keys.end(), second.begin(), second.end());
  return keys;
}

TEST_CASE("PushClockAndPull of a push to two servers sends the pull once the push is acknowledged, "
          "and the pull carries the tick in place of a ClockRequest",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfBothGroups();
  const std::vector<float> grads = Grads(keys);
  std::vector<float> next(keys.size() * 2);
  absl::Status pulled;
  REQUIRE(PushClockAndPullRows(rig, keys, grads, absl::MakeSpan(next), &pulled).ok());
  REQUIRE(pulled.ok());
  CHECK(rig.client->clock() == 1);
  REQUIRE(rig.client->Finish().ok());
  for (uint32_t server : {0u, 1u}) {
    INFO("server " << server);
    CHECK(EndClocks(rig.shard(server)) == std::vector<int64_t>{0});
    const std::vector<v1::PullRequest> pulls = rig.shard(server).pulls();
    REQUIRE(pulls.size() == 1);
    CHECK_FALSE(pulls[0].after_tick());  // a plain pull of iteration 1: it ticks
    CHECK(pulls[0].clock() == 1);
    CHECK(Ticks(rig.shard(server)) == std::vector<int64_t>{-1});  // no ClockRequest but Finish's
  }
}

TEST_CASE("PushClockAndPull of a push to two servers sends a ClockRequest to the server the pull "
          "does not read from",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfBothGroups();
  const std::vector<float> grads = Grads(keys);
  const std::vector<Key> read = KeysOfGroup(0, 4);  // all on server 0
  std::vector<float> next(read.size() * 2);
  absl::Status pulled;
  REQUIRE(rig.client
              ->PushClockAndPull({}, {ConstSparseRows{"emb", keys, grads}}, {},
                                 {SparseRows{"emb", read, absl::MakeSpan(next)}}, &pulled)
              .ok());
  REQUIRE(pulled.ok());
  REQUIRE(rig.client->Finish().ok());
  CHECK(rig.shard(0).pulls().size() == 1);
  CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{-1});
  CHECK(rig.shard(1).pulls().empty());
  CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, -1});
}

// PushClockAndPullRows of `keys`, the pull refused by `server`
// (InvalidArgument): the push goes through, the pull's error is returned.
absl::Status PushAndRefusedPull(Rig& rig, uint32_t server, const std::vector<Key>& keys) {
  rig.shard(server).FailNext(FakeShard::Rpc::kPull,
                             grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "refused"));
  const std::vector<float> grads = Grads(keys);
  std::vector<float> next(keys.size() * 2);
  absl::Status pulled;
  const absl::Status pushed = PushClockAndPullRows(rig, keys, grads, absl::MakeSpan(next), &pulled);
  CHECK(pushed.ok());
  return pulled;
}

TEST_CASE("a pull refused after a push to two servers still ends the iteration on both with "
          "ClockRequests",
          "[client][clock]") {
  Rig rig;
  CHECK(absl::IsInvalidArgument(PushAndRefusedPull(rig, 1, KeysOfBothGroups())));
  CHECK(rig.client->clock() == 1);
  REQUIRE(rig.client->Finish().ok());
  CHECK(Ticks(rig.shard(0)) == std::vector<int64_t>{1, -1});  // idempotent beside the pull's
  CHECK(Ticks(rig.shard(1)) == std::vector<int64_t>{1, -1});
}

TEST_CASE("a pull ahead that fails leaves the push and the new iteration, and a plain pull reads "
          "it again",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const absl::Status pulled = PushAndRefusedPull(rig, 0, keys);
  CHECK(absl::IsInvalidArgument(pulled));
  CHECK_THAT(std::string(pulled.message()), Catch::Contains("pull of iteration 1 ahead"));
  CHECK(rig.client->clock() == 1);
  CHECK(rig.shard(0).applied() == 1);
  std::vector<float> next(keys.size() * 2);
  REQUIRE(rig.client->PullAndWait({}, {SparseRows{"emb", keys, absl::MakeSpan(next)}}).ok());
  CHECK(next[0] == static_cast<float>(keys[0]));
  const std::vector<v1::PullRequest> pulls = rig.shard(0).pulls();
  REQUIRE(pulls.size() == 2);
  CHECK_FALSE(pulls[1].after_tick());
  CHECK(pulls[1].clock() == 1);
  REQUIRE(rig.client->Finish().ok());
}

TEST_CASE("a PushClockAndPull whose pull is refused on this side sends nothing", "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<float> grads = Grads(keys);
  std::vector<float> short_next(3);
  absl::Status pulled;
  const absl::Status s =
      PushClockAndPullRows(rig, keys, grads, absl::MakeSpan(short_next), &pulled);
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK(absl::IsCancelled(pulled));
  CHECK(rig.client->clock() == 0);
  REQUIRE(rig.client->Finish().ok());
  CHECK(rig.shard(0).pushes().empty());
  CHECK(rig.shard(0).pulls().empty());
}

TEST_CASE("PushClockAndPull runs `meanwhile` once, after the push and its pull ahead are sent",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 8);
  const std::vector<float> grads = Grads(keys);
  std::vector<float> next(keys.size() * 2);
  absl::Status pulled;
  int runs = 0;
  size_t pushes_sent = 0;
  size_t pulls_sent = 0;
  REQUIRE(rig.client
              ->PushClockAndPull({}, {ConstSparseRows{"emb", keys, grads}}, {},
                                 {SparseRows{"emb", keys, absl::MakeSpan(next)}}, &pulled,
                                 [&] {
                                   ++runs;
                                   pushes_sent = rig.shard(0).pushes().size();
                                   pulls_sent = rig.shard(0).pulls().size();
                                 })
              .ok());
  REQUIRE(pulled.ok());
  CHECK(runs == 1);
  CHECK(pushes_sent == 1);
  CHECK(pulls_sent == 1);
  CHECK(next[0] == static_cast<float>(keys[0]));  // the pull's answer, taken after it
  REQUIRE(rig.client->Finish().ok());
}

TEST_CASE("PushClockAndPull does not run `meanwhile` when its inputs are refused before anything "
          "is sent",
          "[client][clock]") {
  Rig rig;
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<float> grads = Grads(keys);
  std::vector<float> short_next(3);
  absl::Status pulled;
  int runs = 0;
  const absl::Status s = rig.client->PushClockAndPull(
      {}, {ConstSparseRows{"emb", keys, grads}}, {},
      {SparseRows{"emb", keys, absl::MakeSpan(short_next)}}, &pulled, [&] { ++runs; });
  REQUIRE(absl::IsInvalidArgument(s));
  CHECK(runs == 0);
  CHECK(rig.shard(0).pushes().empty());
  REQUIRE(rig.client->Finish().ok());
}

TEST_CASE("once the registration is lost, the calls that wait on their own thread fail at once "
          "instead of waiting for answers that never come",
          "[client]") {
  Rig rig(3, /*heartbeat=*/true);
  rig.coordinator->FailJob("server 1 lost its data");
  // The next heartbeats (every 500 ms) learn it; an empty push then fails.
  absl::Status lost;
  for (int i = 0; i < 100 && lost.ok(); ++i) {
    lost = rig.client->Push({}, {}).get();
    if (lost.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  REQUIRE_FALSE(lost.ok());
  const std::vector<Key> keys = KeysOfGroup(0, 4);
  const std::vector<float> grads = Grads(keys);
  std::vector<float> rows(keys.size() * 2);
  CHECK(rig.client->PullAndWait({}, {SparseRows{"emb", keys, absl::MakeSpan(rows)}}).code() ==
        lost.code());
  CHECK(rig.client->PushAndWait({}, {ConstSparseRows{"emb", keys, grads}}).code() ==
        lost.code());
  absl::Status pulled;
  CHECK(PushClockAndPullRows(rig, keys, grads, absl::MakeSpan(rows), &pulled).code() ==
        lost.code());
  CHECK(rig.shard(0).pushes().empty());
  CHECK(rig.shard(0).pulls().empty());
}

}  // namespace
}  // namespace cairn
