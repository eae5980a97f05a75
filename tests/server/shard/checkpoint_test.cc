// Checkpoint store: write/read round trips through RocksDB, retention,
// corruption caught by checksums, table-shape mismatches, a held store, a
// missing directory, and restore onto another number of servers.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "common/partitioning.h"
#include "rocksdb/db.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/internal/coding.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/checkpoint_writer.h"
#include "server/checkpoint/restore_plan.h"
#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn::checkpoint {
namespace {

using cairn::testing::B10Keys;
using cairn::testing::DenseAdagrad;
using cairn::testing::Owned;
using cairn::testing::SparseAdam;
using cairn::testing::TempDir;
using cairn::testing::Train;

constexpr uint32_t kPartitions = 6;

std::vector<Key> AllChunks() {
  std::vector<Key> keys;
  for (Key k = 0; k < 14; ++k) keys.push_back(k);
  return keys;
}

// One server's tables (W dense, E sparse) holding partitions p % servers == server.
struct Server {
  std::unique_ptr<Table> dense;
  std::unique_ptr<Table> sparse;
};

Server MakeServer(uint32_t servers, uint32_t server) {
  Server s;
  s.dense = std::move(*Table::Create(DenseAdagrad(), kPartitions, Owned(kPartitions, servers, server)));
  s.sparse = std::move(*Table::Create(SparseAdam(), kPartitions, Owned(kPartitions, servers, server)));
  return s;
}

std::vector<TableShape> Shapes() {
  return {ShapeOf(DenseAdagrad(), 1), ShapeOf(SparseAdam(), 2)};
}

// A trained single server holding every partition.
Server TrainedServer() {
  Server s = MakeServer(1, 0);
  Train(*s.dense, AllChunks(), 4);
  Train(*s.sparse, B10Keys(), 3);
  return s;
}

// Every partition `s` holds, exported.
std::vector<PartitionData> Export(const Server& s, uint32_t servers, uint32_t server) {
  std::vector<PartitionData> out;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    if (p % servers != server) continue;
    out.push_back({0, p, *s.dense->ExportPartition(p)});
    out.push_back({1, p, *s.sparse->ExportPartition(p)});
  }
  return out;
}

WorkerState Workers() {
  WorkerState w;
  w.clocks = {{0, 20}, {1, 21}};
  w.sequence_floors = {{0, 40}, {1, 0xffffffffffffffffull}};
  return w;
}

std::string ReadAll(const Table& t, const std::vector<Key>& keys) {
  std::string out;
  t.Read(KeysToBytes(keys), keys.size(), &out);
  return out;
}

TEST_CASE("manifest, rows and worker state encode and decode exactly") {
  Manifest m;
  m.id = 7;
  m.clock = -3;
  m.server_id = 2;
  m.num_partitions = 6;
  m.unix_millis = 1234567890123;
  m.tables = Shapes();
  m.partitions = {{0, 5, 3, 100, 0x0123456789abcdefull}, {1, 0, 0, 8, 1}};
  m.workers_checksum = 99;
  auto back = DecodeManifest(EncodeManifest(m), "m");
  REQUIRE(back.ok());
  CHECK(*back == m);

  std::string bytes = EncodeManifest(m);
  bytes[10] ^= 0x01;
  const auto bad = DecodeManifest(bytes, "manifest 7");
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("manifest 7: manifest checksum mismatch"));

  auto w = DecodeWorkers(EncodeWorkers(Workers()), "w");
  REQUIRE(w.ok());
  CHECK(*w == Workers());

  PartitionRows rows;
  rows.slots_per_element = 1;
  rows.keys = {0, Key{1} << 63, ~Key{0}};
  rows.lengths = {1, 1, 2};
  rows.steps = {1, 2, 3};
  rows.values = {1.5f, -0.0f, 3.25f, 4.0f};
  rows.slots = {0.1f, 0.2f, 0.3f, 0.4f};
  auto r = DecodeRows(EncodeRows(rows), "r");
  REQUIRE(r.ok());
  CHECK(*r == rows);
  std::string truncated = EncodeRows(rows);
  truncated.pop_back();
  CHECK(DecodeRows(truncated, "r").status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("a dense table's partition offset is kept by a manifest, and format 1 reads as offset 0") {
  v1::TableSpec spec = DenseAdagrad();
  spec.set_partition_offset(5);
  Manifest m;
  m.id = 3;
  m.clock = 12;
  m.num_partitions = 6;
  m.tables = {ShapeOf(spec, 1), ShapeOf(SparseAdam(), 2)};
  CHECK(m.tables[0].partition_offset == 5);
  CHECK(m.tables[1].partition_offset == 0);
  auto back = DecodeManifest(EncodeManifest(m), "m");
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK_THAT(DescribeShape(m.tables[0]), Catch::EndsWith("partition_offset 5"));

  // The same manifest as a build of format 1 wrote it: no offsets.
  checkpoint::internal::Encoder e;
  e.Put<uint32_t>(1);
  e.Put(m.id);
  e.Put(m.clock);
  e.Put(m.server_id);
  e.Put(m.num_partitions);
  e.Put(m.unix_millis);
  e.Put<uint32_t>(static_cast<uint32_t>(m.tables.size()));
  for (const TableShape& t : m.tables) {
    e.Put(t.id);
    e.PutString(t.name);
    e.Put(t.kind);
    e.Put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    e.PutArray(t.shape);
    e.Put(t.chunk_size);
    e.Put(t.width);
    e.Put(t.slots_per_element);
  }
  e.Put<uint64_t>(0);
  e.Put(m.workers_checksum);
  e.Put<uint64_t>(Checksum(e.bytes()));
  auto old = DecodeManifest(e.bytes(), "old");
  REQUIRE(old.ok());
  REQUIRE(old->tables.size() == 2);
  CHECK(old->tables[0].partition_offset == 0);
  CHECK(old->tables[0].shape == m.tables[0].shape);
  CHECK(old->clock == 12);
}

TEST_CASE("a checkpoint reads back bit-exactly, and the last K are kept") {
  TempDir dir("cairn-ckpt-roundtrip");
  Server s = TrainedServer();
  {
    auto writer = CheckpointWriter::Open(dir.path("s0"), 0, 2);
    REQUIRE(writer.ok());
    for (int64_t clock : {10, 20, 30}) {
      auto m = (*writer)->Write(clock, kPartitions, Shapes(), Export(s, 1, 0), Workers());
      REQUIRE(m.ok());
      CHECK(m->clock == clock);
      CHECK(m->partitions.size() == 2 * kPartitions);
    }
  }
  auto reader = CheckpointReader::Open(dir.path("s0"));
  REQUIRE(reader.ok());
  auto all = (*reader)->List();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].id == 2);
  CHECK((*all)[0].clock == 20);
  auto latest = (*reader)->Latest();
  REQUIRE(latest.ok());
  CHECK(latest->id == 3);
  CHECK(latest->clock == 30);
  CHECK(CheckTablesMatch(*latest, Shapes()).ok());
  auto workers = (*reader)->ReadWorkers(*latest);
  REQUIRE(workers.ok());
  CHECK(*workers == Workers());

  uint64_t sparse_keys = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    auto dense = (*reader)->ReadPartition(*latest, 0, p);
    REQUIRE(dense.ok());
    CHECK(*dense == *s.dense->ExportPartition(p));
    auto sparse = (*reader)->ReadPartition(*latest, 1, p);
    REQUIRE(sparse.ok());
    CHECK(*sparse == *s.sparse->ExportPartition(p));
    sparse_keys += sparse->keys.size();
  }
  CHECK(sparse_keys == 102);
  // Checkpoint 1 was deleted whole: no manifest, no data.
  auto gone = (*reader)->ReadPartition(Manifest{.id = 1, .partitions = {{0, 0, 0, 0, 0}}}, 0, 0);
  CHECK(gone.status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("a flipped byte in a stored partition is caught by its checksum") {
  TempDir dir("cairn-ckpt-flip-value");
  Server s = TrainedServer();
  {
    auto writer = CheckpointWriter::Open(dir.path("s0"), 0, 3);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(5, kPartitions, Shapes(), Export(s, 1, 0), Workers()).ok());
  }
  {  // Damage the value behind RocksDB's back (its own checksums stay valid).
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::Options(), dir.path("s0"), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string value;
    REQUIRE(db->Get(rocksdb::ReadOptions(), PartitionKey(1, 1, 4), &value).ok());
    value[value.size() / 2] ^= 0x20;
    REQUIRE(db->Put(rocksdb::WriteOptions(), PartitionKey(1, 1, 4), value).ok());
    REQUIRE(db->Close().ok());
  }
  auto reader = CheckpointReader::Open(dir.path("s0"));
  REQUIRE(reader.ok());
  auto latest = (*reader)->Latest();
  REQUIRE(latest.ok());
  CHECK((*reader)->ReadPartition(*latest, 1, 3).ok());
  auto rows = (*reader)->ReadPartition(*latest, 1, 4);
  CHECK(rows.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(rows.status().message()),
             Catch::Contains("checkpoint 1 table E partition 4: checksum mismatch"));
}

TEST_CASE("a flipped byte in RocksDB's table file is reported as DataLoss") {
  TempDir dir("cairn-ckpt-flip-sst");
  Server s = TrainedServer();
  {
    auto writer = CheckpointWriter::Open(dir.path("s0"), 0, 3);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(5, kPartitions, Shapes(), Export(s, 1, 0), Workers()).ok());
  }
  std::filesystem::path sst;
  for (const auto& e : std::filesystem::directory_iterator(dir.path("s0"))) {
    if (e.path().extension() == ".sst" &&
        (sst.empty() || e.file_size() > std::filesystem::file_size(sst))) {
      sst = e.path();
    }
  }
  REQUIRE(!sst.empty());
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x40;
    f.seekp(100);
    f.write(&c, 1);
  }
  // Wherever RocksDB notices (open, listing, or the read), it is DataLoss and
  // no partition of the damaged block is returned.
  absl::Status status;
  auto reader = CheckpointReader::Open(dir.path("s0"));
  status = reader.status();
  if (status.ok()) {
    auto all = (*reader)->List();
    status = all.status();
    for (size_t i = 0; status.ok() && i < all->size(); ++i) {
      for (uint32_t p = 0; status.ok() && p < kPartitions; ++p) {
        status = (*reader)->ReadPartition((*all)[i], 0, p).status();
        if (status.ok()) status = (*reader)->ReadPartition((*all)[i], 1, p).status();
      }
    }
  }
  CHECK(status.code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("a checkpoint whose table shapes differ from the job names table and shapes") {
  Manifest m;
  m.id = 4;
  m.tables = Shapes();
  SECTION("dense shape") {
    const absl::Status s =
        CheckTablesMatch(m, {ShapeOf(DenseAdagrad({10, 5}), 1), ShapeOf(SparseAdam(), 2)});
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(s.message() ==
          "table W: checkpoint 4 has dense [10,4] chunk_size 3 slots 1 (id 0), the job has "
          "dense [10,5] chunk_size 3 slots 1 (id 0)");
  }
  SECTION("missing table") {
    const absl::Status s = CheckTablesMatch(m, {ShapeOf(DenseAdagrad(), 1)});
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(s.message() == "table E: checkpoint 4 has sparse width 4 slots 2, the job has no such table");
  }
}

TEST_CASE("a missing directory is NotFound and is not created") {
  TempDir dir("cairn-ckpt-missing");
  auto reader = CheckpointReader::Open(dir.path("nope"));
  CHECK(reader.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(reader.status().message()), Catch::Contains("does not exist"));
  CHECK(!std::filesystem::exists(dir.path("nope")));
}

TEST_CASE("a store held by a live writer is refused to a second writer") {
  TempDir dir("cairn-ckpt-held");
  auto first = CheckpointWriter::Open(dir.path("s0"), 0, 2);
  REQUIRE(first.ok());
  auto second = CheckpointWriter::Open(dir.path("s0"), 1, 2);
  CHECK(second.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(second.status().message()), Catch::Contains(dir.path("s0")));
  // A reader may still look at it.
  CHECK(CheckpointReader::Open(dir.path("s0")).ok());
}

// Restores the checkpoints in `dirs` onto `servers` fresh servers: each
// partition goes to p % servers, read from whichever store holds it.
std::vector<Server> Restore(const std::vector<std::string>& dirs, uint32_t servers) {
  std::vector<Server> out;
  for (uint32_t i = 0; i < servers; ++i) out.push_back(MakeServer(servers, i));
  for (const std::string& d : dirs) {
    auto reader = CheckpointReader::Open(d);
    REQUIRE(reader.ok());
    auto m = (*reader)->Latest();
    REQUIRE(m.ok());
    REQUIRE(CheckTablesMatch(*m, Shapes()).ok());
    for (const PartitionEntry& e : m->partitions) {
      auto rows = (*reader)->ReadPartition(*m, e.table_id, e.partition);
      REQUIRE(rows.ok());
      Server& target = out[e.partition % servers];
      Table& t = e.table_id == 0 ? *target.dense : *target.sparse;
      REQUIRE(t.ImportPartition(e.partition, *rows).ok());
    }
  }
  return out;
}

// Every value of W and E across `servers`, each key read where it lives.
std::string Gather(const std::vector<Server>& servers) {
  std::string out;
  const uint32_t n = static_cast<uint32_t>(servers.size());
  for (Key c : AllChunks()) {
    out += ReadAll(*servers[DensePartition(c, 14, kPartitions) % n].dense, {c});
  }
  for (Key k : B10Keys()) out += ReadAll(*servers[SparsePartition(k, kPartitions) % n].sparse, {k});
  return out;
}

TEST_CASE("a checkpoint of 2 servers restores onto 3, and one of 3 onto 1 (B10)") {
  TempDir dir("cairn-ckpt-reshard");
  const Server reference = TrainedServer();
  // Two servers holding the same state as `reference`, split by partition.
  std::vector<Server> two = Restore({}, 2);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    REQUIRE(two[p % 2].dense->ImportPartition(p, *reference.dense->ExportPartition(p)).ok());
    REQUIRE(two[p % 2].sparse->ImportPartition(p, *reference.sparse->ExportPartition(p)).ok());
  }
  for (uint32_t i = 0; i < 2; ++i) {
    auto writer = CheckpointWriter::Open(dir.path("two-" + std::to_string(i)), i, 2);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(20, kPartitions, Shapes(), Export(two[i], 2, i), Workers()).ok());
  }
  const std::vector<Server> three = Restore({dir.path("two-0"), dir.path("two-1")}, 3);
  CHECK(Gather(three) == Gather(two));
  uint64_t keys = 0;
  for (const Server& s : three) keys += s.sparse->NumKeys();
  CHECK(keys == 102);

  for (uint32_t i = 0; i < 3; ++i) {
    auto writer = CheckpointWriter::Open(dir.path("three-" + std::to_string(i)), i, 2);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(20, kPartitions, Shapes(), Export(three[i], 3, i), Workers()).ok());
  }
  const std::vector<Server> one =
      Restore({dir.path("three-0"), dir.path("three-1"), dir.path("three-2")}, 1);
  CHECK(Gather(one) == Gather(two));
  // One of the three stores alone lacks two thirds of the partitions: the
  // first few are named, the rest counted.
  auto store = CheckpointReader::Open(dir.path("three-0"));
  REQUIRE(store.ok());
  auto alone = PlanRestore({store->get()});
  CHECK(alone.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(alone.status().message()),
             Catch::EndsWith("the newest checkpoint (clock 20) lacks table/partition W/1, W/2, "
                             "W/4, W/5, E/1, E/2 and 2 more (8 of 12)"));
  for (uint32_t p = 0; p < kPartitions; ++p) {
    CHECK(*one[0].dense->ExportPartition(p) == *reference.dense->ExportPartition(p));
    CHECK(*one[0].sparse->ExportPartition(p) == *reference.sparse->ExportPartition(p));
  }
}

TEST_CASE("a restore skips a checkpoint that not every server finished") {
  TempDir dir("cairn-ckpt-plan");
  const Server reference = TrainedServer();
  std::vector<Server> two = Restore({}, 2);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    REQUIRE(two[p % 2].dense->ImportPartition(p, *reference.dense->ExportPartition(p)).ok());
    REQUIRE(two[p % 2].sparse->ImportPartition(p, *reference.sparse->ExportPartition(p)).ok());
  }
  {
    // Server 0 finished clocks 20 and 30; server 1 only 20 (it died during 30).
    auto w0 = CheckpointWriter::Open(dir.path("s0"), 0, 3);
    auto w1 = CheckpointWriter::Open(dir.path("s1"), 1, 3);
    REQUIRE((w0.ok() && w1.ok()));
    REQUIRE((*w0)->Write(20, kPartitions, Shapes(), Export(two[0], 2, 0), Workers()).ok());
    REQUIRE((*w1)->Write(20, kPartitions, Shapes(), Export(two[1], 2, 1), Workers()).ok());
    REQUIRE((*w0)->Write(30, kPartitions, Shapes(), Export(two[0], 2, 0), Workers()).ok());
  }
  auto r0 = CheckpointReader::Open(dir.path("s0"));
  auto r1 = CheckpointReader::Open(dir.path("s1"));
  REQUIRE((r0.ok() && r1.ok()));
  auto plan = PlanRestore({r0->get(), r1->get()});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 2);
  CHECK((*plan)[0].manifest.clock == 20);
  CHECK((*plan)[1].manifest.clock == 20);
  CHECK((*plan)[0].reader == r0->get());

  // Server 0's store alone lacks every partition server 1 held.
  auto alone = PlanRestore({r0->get()});
  CHECK(alone.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(alone.status().message()),
             Catch::Contains("the newest checkpoint (clock 30) lacks table/partition W/1, W/3, "
                             "W/5, E/1, E/3, E/5"));
  CHECK(PlanRestore({}).status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::checkpoint
