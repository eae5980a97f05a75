// Shard::Snapshot / RestorePartition through the checkpoint store: state of
// two in-process servers restores onto three, and that onto one (B10).
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/partitioning.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/checkpoint_writer.h"
#include "server/shard/shard.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn {
namespace {

using checkpoint::CheckpointReader;
using checkpoint::CheckpointWriter;
using checkpoint::PartitionData;
using checkpoint::ShapeOf;
using checkpoint::TableShape;
using checkpoint::WorkerState;
using testing::B10Keys;
using testing::DenseAdagrad;
using testing::SparseAdam;
using testing::TempDir;

constexpr uint32_t kPartitions = 6;
constexpr uint64_t kChunks = 14;  // W: 40 floats in chunks of 3

v1::JobSpec Job() {
  v1::JobSpec job;
  for (v1::TableSpec t : {DenseAdagrad(), SparseAdam()}) {
    t.set_consistency(v1::CONSISTENCY_ASP);  // applied on arrival; pulls never wait
    *job.add_tables() = t;
  }
  job.set_num_partitions(kPartitions);
  return job;
}

v1::PartitionMap Map(uint32_t servers) {
  v1::PartitionMap map;
  map.set_version(1);
  map.set_num_partitions(kPartitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(p % servers);
    a->set_group(p % servers);  // each server's partitions are its replica group
  }
  v1::Member* m = map.add_workers();
  m->set_id(0);
  m->set_role(v1::MEMBER_ROLE_WORKER);
  m->set_state(v1::MEMBER_STATE_ALIVE);
  m->set_incarnation(1);
  return map;
}

std::vector<std::unique_ptr<Shard>> Servers(uint32_t n) {
  std::vector<std::unique_ptr<Shard>> out;
  for (uint32_t i = 0; i < n; ++i) {
    out.push_back(std::make_unique<Shard>(i, Job(), nullptr));
    REQUIRE(out.back()->InstallMap(Map(n)).ok());
  }
  return out;
}

// Keys of W (chunks) and E (B10 keys) held by server `s` of `n`.
std::vector<Key> DenseKeys(uint32_t s, uint32_t n) {
  std::vector<Key> keys;
  for (Key c = 0; c < kChunks; ++c) {
    if (DensePartition(c, kChunks, kPartitions) % n == s) keys.push_back(c);
  }
  return keys;
}
std::vector<Key> SparseKeys(uint32_t s, uint32_t n) {
  std::vector<Key> keys;
  for (Key k : B10Keys()) {
    if (SparsePartition(k, kPartitions) % n == s) keys.push_back(k);
  }
  return keys;
}
uint64_t DenseFloats(const std::vector<Key>& chunks) {
  uint64_t n = 0;
  for (Key c : chunks) n += c == kChunks - 1 ? 1 : 3;
  return n;
}

// Pushes `steps` gradients from worker 0 to every server of `servers`.
void Train(std::vector<std::unique_ptr<Shard>>& servers, int steps) {
  const uint32_t n = static_cast<uint32_t>(servers.size());
  for (int step = 0; step < steps; ++step) {
    for (uint32_t s = 0; s < n; ++s) {
      v1::PushRequest r;
      r.set_map_version(1);
      r.set_worker_id(0);
      r.set_incarnation(1);
      r.set_group(s);
      r.set_sequence(static_cast<uint64_t>(step) + 1);
      r.set_clock(step);
      const std::vector<Key> dense = DenseKeys(s, n), sparse = SparseKeys(s, n);
      std::vector<float> dg, sg;
      for (uint64_t i = 0; i < DenseFloats(dense); ++i) dg.push_back(0.01f * ((i + step) % 5) - 0.02f);
      for (uint64_t i = 0; i < sparse.size() * 4; ++i) sg.push_back(0.03f * ((i * 7 + step) % 3) - 0.03f);
      v1::TableValues* w = r.add_tables();
      w->set_table_id(0);
      w->set_table("W");
      w->set_keys(KeysToBytes(dense));
      w->set_values(FloatsToBytes(dg));
      const v1::TableSpec w_spec = DenseAdagrad();
      for (int64_t d : w_spec.shape()) w->add_shape(d);
      w->set_dtype(v1::DTYPE_FLOAT32);
      v1::TableValues* e = r.add_tables();
      e->set_table_id(1);
      e->set_table("E");
      e->set_keys(KeysToBytes(sparse));
      e->set_values(FloatsToBytes(sg));
      e->add_shape(static_cast<int64_t>(sparse.size()));
      e->add_shape(4);
      e->set_dtype(v1::DTYPE_FLOAT32);
      auto applied = servers[s]->Push(r);
      INFO(applied.status().message());
      REQUIRE(applied.ok());
    }
  }
}

// Pulls `key` of table `table_id` from `server`.
std::string PullKey(Shard& server, uint32_t table_id, const std::string& table, Key key) {
  v1::PullRequest req;
  req.set_map_version(1);
  req.set_worker_id(0);
  v1::TableKeys* tk = req.add_tables();
  tk->set_table_id(table_id);
  tk->set_table(table);
  tk->set_keys(KeysToBytes({key}));
  v1::PullResponse resp;
  absl::Status status = absl::UnknownError("not done");
  server.Pull(&req, &resp, absl::InfiniteFuture(), [&](absl::Status st) { status = st; });
  REQUIRE(status.ok());  // ASP: served at once
  return resp.tables(0).values();
}

// Every value of W and E in key order, each key pulled from the server that
// holds it under `servers.size()` servers.
std::string ValuesByKey(std::vector<std::unique_ptr<Shard>>& servers) {
  const uint32_t n = static_cast<uint32_t>(servers.size());
  std::string out;
  for (Key c = 0; c < kChunks; ++c) {
    out += PullKey(*servers[DensePartition(c, kChunks, kPartitions) % n], 0, "W", c);
  }
  for (Key k : B10Keys()) {
    out += PullKey(*servers[SparsePartition(k, kPartitions) % n], 1, "E", k);
  }
  return out;
}

// Writes each server's snapshot into store `prefix`-<i> at clock 2.
void Checkpoint(std::vector<std::unique_ptr<Shard>>& servers, const TempDir& dir,
                const std::string& prefix) {
  const std::vector<TableShape> shapes = {ShapeOf(DenseAdagrad(), 1), ShapeOf(SparseAdam(), 2)};
  for (uint32_t i = 0; i < servers.size(); ++i) {
    auto snap = servers[i]->Snapshot();
    REQUIRE(snap.ok());
    std::vector<PartitionData> parts;
    for (auto& p : snap->partitions) parts.push_back({p.table_id, p.partition, std::move(p.rows)});
    WorkerState workers{snap->worker_clocks, snap->sequence_floors};
    auto writer = CheckpointWriter::Open(dir.path(prefix + std::to_string(i)), i, 2);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(2, kPartitions, shapes, parts, workers).ok());
  }
}

// New servers restored from every store named `prefix`-<0..stores-1>.
std::vector<std::unique_ptr<Shard>> Restore(const TempDir& dir, const std::string& prefix,
                                            uint32_t stores, uint32_t servers) {
  auto out = Servers(servers);
  for (uint32_t i = 0; i < stores; ++i) {
    auto reader = CheckpointReader::Open(dir.path(prefix + std::to_string(i)));
    REQUIRE(reader.ok());
    auto m = (*reader)->Latest();
    REQUIRE(m.ok());
    for (const auto& e : m->partitions) {
      auto rows = (*reader)->ReadPartition(*m, e.table_id, e.partition);
      REQUIRE(rows.ok());
      REQUIRE(out[e.partition % servers]->RestorePartition(e.table_id, e.partition, *rows).ok());
    }
  }
  return out;
}

TEST_CASE("two servers' checkpoint restores onto three and then onto one") {
  TempDir dir("cairn-shard-ckpt");
  auto two = Servers(2);
  Train(two, 2);
  const std::string reference = ValuesByKey(two);
  REQUIRE(reference.size() == (40 + 102 * 4) * sizeof(float));
  {
    auto snap = two[0]->Snapshot();
    REQUIRE(snap.ok());
    CHECK(snap->worker_clocks.at(0) == 0);
    CHECK(snap->sequence_floors.at(0) == 3);  // sequences 1 and 2 applied
  }
  Checkpoint(two, dir, "two-");

  auto three = Restore(dir, "two-", 2, 3);
  CHECK(ValuesByKey(three) == reference);
  uint64_t sparse_keys = 0;
  for (auto& s : three) {
    const auto snap = s->Snapshot();
    REQUIRE(snap.ok());
    for (const auto& p : snap->partitions) {
      if (p.table_id == 1) sparse_keys += p.rows.keys.size();
    }
  }
  CHECK(sparse_keys == 102);

  Checkpoint(three, dir, "three-");
  auto one = Restore(dir, "three-", 3, 1);
  CHECK(ValuesByKey(one) == reference);
  // Slots and update counts came along too: the single server's snapshot
  // equals the two servers' snapshots partition by partition.
  auto all = one[0]->Snapshot();
  REQUIRE(all.ok());
  for (const auto& p : all->partitions) {
    const auto before = two[p.partition % 2]->Snapshot();
    REQUIRE(before.ok());
    for (const auto& q : before->partitions) {
      if (q.table_id == p.table_id && q.partition == p.partition) CHECK(q.rows == p.rows);
    }
  }
}

TEST_CASE("restore is refused after a push and for a partition held elsewhere") {
  auto servers = Servers(2);
  PartitionRows empty;
  empty.slots_per_element = 2;
  const absl::Status elsewhere = servers[0]->RestorePartition(1, 1, empty);
  CHECK(elsewhere.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(elsewhere.message()), Catch::Contains("partition 1"));
  Train(servers, 1);
  const absl::Status late = servers[0]->RestorePartition(1, 0, empty);
  CHECK(late.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(late.message()), Catch::Contains("before any push"));
}

}  // namespace
}  // namespace cairn
