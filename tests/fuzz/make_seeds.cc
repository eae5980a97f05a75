// Writes the binary seed inputs of the fuzz targets into CORPUS_DIR/<target>/
// (tests/fuzz/corpus): valid inputs made with the production encoders and
// the fuzz_shard.h server, so the fuzzers start from what real peers send.
// The YAML seeds are the examples/ files, copied by hand.
//
// Usage: cairn-fuzz-seeds CORPUS_DIR. Exit 0, or 1 naming what failed.
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bytes.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/table.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

namespace cairn::fuzz {
namespace {

namespace fs = std::filesystem;

std::string root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = fs::path(root) / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Fail(absl::StrCat("cannot write ", (dir / name).string()));
}

template <typename Message>
std::string Bytes(const Message& m) {
  std::string out;
  if (!m.SerializeToString(&out)) Fail("serialize");
  return out;
}

std::string Gzip(const std::string& plain) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) Fail("deflate");
  std::string out(plain.size() + 128, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) Fail("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void PutBe32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

void IdxSeeds() {
  std::string images;
  PutBe32(2051, &images);
  for (uint32_t d : {3u, 4u, 5u}) PutBe32(d, &images);
  for (int i = 0; i < 3 * 4 * 5; ++i) images.push_back(static_cast<char>(i * 17));
  std::string labels;
  PutBe32(2049, &labels);
  PutBe32(4, &labels);
  for (char l : {0, 3, 9, 5}) labels.push_back(l);
  Write("idx", "images-3x4x5", images);
  Write("idx", "images-3x4x5.gz", Gzip(images));
  Write("idx", "labels-4", labels);
  Write("idx", "labels-4.gz", Gzip(labels));
}

void CriteoSeeds() {
  auto line = [](int label, int seed, bool missing) {
    std::vector<std::string> f{std::to_string(label)};
    for (int i = 0; i < 13; ++i) {
      f.push_back(missing && i % 4 == 0 ? "" : std::to_string((seed * 31 + i * 7) % 50 - 2));
    }
    for (int i = 0; i < 26; ++i) {
      char hex[9];
      std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(seed * 2654435761u + i));
      f.push_back(missing && i % 5 == 0 ? "" : hex);
    }
    return absl::StrJoin(f, "\t");
  };
  Write("criteo", "three-lines", line(0, 1, false) + "\n" + line(1, 2, true) + "\n" +
                                     line(0, 3, false) + "\n");
  Write("criteo", "crlf-no-final-newline", line(1, 4, false) + "\r\n" + line(0, 5, true));
}

std::string Safetensors(const std::string& header, const std::string& data) {
  std::string out;
  const uint64_t n = header.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(header);
  out.append(data);
  return out;
}

void SafetensorsSeeds() {
  // Every table of fuzz_shard.h: w F32 [3,5], emb F32 [3,4] + keys,
  // b F32 [5], emb16 F32 [2,3] + keys.
  std::string data;
  std::vector<std::string> entries;
  auto add = [&](const std::string& name, const std::string& dtype, const std::string& shape,
                 const std::string& bytes) {
    entries.push_back(absl::StrCat("\"", name, "\":{\"dtype\":\"", dtype, "\",\"shape\":", shape,
                                   ",\"data_offsets\":[", data.size(), ",",
                                   data.size() + bytes.size(), "]}"));
    data += bytes;
  };
  std::vector<float> w(15);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i);
  add("w", "F32", "[3,5]", FloatsToBytes(w));
  add("emb", "F32", "[3,4]", FloatsToBytes(std::vector<float>(12, 0.5f)));
  add("emb.keys", "U64", "[3]", KeysToBytes({7919, 15838, 23757}));
  add("b", "F32", "[5]", FloatsToBytes({1, 2, 3, 4, 5}));
  add("emb16", "F32", "[2,3]", FloatsToBytes(std::vector<float>(6, -1.0f)));
  add("emb16.keys", "U64", "[2]", KeysToBytes({31676, 3}));
  Write("safetensors", "all-tables",
        Safetensors(absl::StrCat("{\"__metadata__\":{\"format\":\"pt\"},",
                                 absl::StrJoin(entries, ","), "}"),
                    data));
  Write("safetensors", "empty-header", Safetensors("{}", ""));
}

// checkpoint_codec's byte 0 for a rows value of partition p: 0 mod 3, and
// (byte >> 2) % 4 == p.
std::string RowsPick(uint32_t p) {
  uint8_t pick = 0;
  while (pick % 3 != 0 || (pick >> 2) % kPartitions != p) ++pick;
  return std::string(1, static_cast<char>(pick));
}

void CheckpointSeeds() {
  const v1::JobSpec job = FuzzJob();
  const std::vector<bool> owned(kPartitions, true);
  const std::vector<std::vector<Key>> keys = AllKeys(job);
  for (const v1::TableSpec& spec : job.tables()) {
    auto table = Table::Create(spec, kPartitions, owned);
    if (!table.ok()) Fail(std::string(table.status().message()));
    // Two pushes of every key: sparse ids are admitted at the second, and
    // the first leaves the ids waiting for admission in a partition's rows.
    for (int round = 0; round < 2; ++round) {
      const v1::PushRequest push = MakePush(job, 1, 0, 0, 1, 0, keys);
      for (const v1::TableValues& tv : push.tables()) {
        if (tv.table_id() != spec.id()) continue;
        std::string values;
        if (tv.dtype() == v1::DTYPE_FLOAT32) {
          values = tv.values();
        } else {
          values = FloatsToBytes(std::vector<float>(tv.values().size() / 2, 0.25f));
        }
        const size_t n = tv.keys().size() / sizeof(Key);
        (*table)->ApplyUnique(tv.keys(), n, values);
        if (round == 0) {
          for (uint32_t p = 0; p < kPartitions; ++p) {
            auto rows = (*table)->ExportPartition(p);
            if (!rows.ok()) Fail(std::string(rows.status().message()));
            if (!rows->pending_keys.empty()) {
              Write("checkpoint_codec", absl::StrCat("rows-pending-", spec.name(), "-p", p),
                    RowsPick(p) + checkpoint::EncodeRows(*rows));
            }
          }
        }
      }
    }
    for (uint32_t p = 0; p < kPartitions; ++p) {
      auto rows = (*table)->ExportPartition(p);
      if (!rows.ok()) Fail(std::string(rows.status().message()));
      Write("checkpoint_codec", absl::StrCat("rows-", spec.name(), "-p", p),
            RowsPick(p) + checkpoint::EncodeRows(*rows));
    }
  }
  checkpoint::Manifest m;
  m.id = 3;
  m.clock = 40;
  m.server_id = 1;
  m.num_partitions = kPartitions;
  m.unix_millis = 1893456000000;
  for (const v1::TableSpec& spec : job.tables()) m.tables.push_back(checkpoint::ShapeOf(spec, 1));
  m.partitions.push_back({0, 1, 3, 120, 42});
  m.partitions.push_back({1, 2, 5, 200, 43});
  m.workers_checksum = 99;
  const std::string manifest = checkpoint::EncodeManifest(m);
  Write("checkpoint_codec", "manifest",
        std::string(1, '\x01') + manifest.substr(0, manifest.size() - sizeof(uint64_t)));
  checkpoint::WorkerState w;
  w.clocks = {{0, 40}, {1, 41}};
  w.sequence_floors = {{0, 80}, {1, 82}};
  Write("checkpoint_codec", "workers", std::string(1, '\x02') + checkpoint::EncodeWorkers(w));
}

// A pull's answer as a worker receives it: the first byte is the slice
// length the target cuts the rest into (0: one slice).
void PullReplySeeds() {
  v1::PullResponse r;
  r.set_min_clock(3);
  v1::TableValues* dense = r.add_tables();
  dense->set_table_id(0);
  dense->set_table("w");
  dense->add_shape(16);
  dense->add_shape(8);
  std::vector<float> values(128);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i);
  dense->set_values(std::string(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(float)));
  v1::TableValues* half = r.add_tables();
  half->set_table_id(1);
  half->set_table("emb");
  half->add_shape(4);
  half->add_shape(8);
  half->set_dtype(v1::DTYPE_BFLOAT16);
  half->set_values(std::string(64, '\x3f'));
  v1::TableValues* shared = r.add_tables();
  shared->set_table_id(2);
  shared->set_table("b");
  shared->mutable_shared()->set_region(1);
  shared->mutable_shared()->set_offset(4096);
  shared->mutable_shared()->set_length(512);
  Write("pull_reply", "three-tables-one-slice", std::string(1, '\0') + Bytes(r));
  Write("pull_reply", "three-tables-slices-of-7", std::string(1, '\x07') + Bytes(r));
  Write("pull_reply", "three-tables-slices-of-64", std::string(1, '\x40') + Bytes(r));
}

void ShardSeeds() {
  const v1::JobSpec job = FuzzJob();
  const std::vector<std::vector<Key>> keys = AllKeys(job);
  Write("push", "all-tables-clock0", Bytes(MakePush(job, 1, 0, 0, 1, 0, keys)));
  Write("push", "sparse-only", Bytes(MakePush(job, 1, 0, 1, 4, 0, {{}, keys[1], {}, keys[3]})));
  Write("push", "dense-clock2", Bytes(MakePush(job, 1, 0, 0, 2, 2, {keys[0], {}, keys[2], {}})));
  {
    // Values in the worker's shared region (region 0 is the harness's).
    v1::PushRequest r = MakePush(job, 1, 0, 0, 1, 0, {keys[0], keys[1], {}, {}});
    uint64_t offset = 64;
    for (v1::TableValues& tv : *r.mutable_tables()) {
      tv.mutable_shared()->set_region(0);
      tv.mutable_shared()->set_offset(offset);
      tv.mutable_shared()->set_length(tv.values().size());
      offset += tv.values().size();
      tv.clear_values();
    }
    Write("push", "shared-region", Bytes(r));
  }
  Write("pull", "all-tables-clock0", Bytes(MakePull(1, 0, keys)));
  Write("pull", "waits-clock5", Bytes(MakePull(1, 5, {{0}, {}, {}, {}})));
  {
    v1::PullRequest r = MakePull(1, 1, keys);
    r.mutable_reply_to()->set_region(0);
    r.mutable_reply_to()->set_offset(64);
    r.mutable_reply_to()->set_length(4096);
    Write("pull", "reply-to-region", Bytes(r));
  }
  {
    std::string frames;
    frames += EncodeFrame(1, "");  // push by worker 0 at its clock
    frames += EncodeFrame(3, "");  // push by worker 1
    frames += EncodeFrame(0, Bytes(MakeClock(1, 0, 1)));
    frames += EncodeFrame(0, Bytes(MakeClock(1, 1, 1)));
    frames += EncodeFrame(1, "");
    frames += EncodeFrame(0, Bytes(MakeClock(1, 0, 2)));
    frames += EncodeFrame(0, Bytes(MakeClock(1, 1, 2)));
    frames += EncodeFrame(0, Bytes(MakeClock(1, 0, 3, /*leaving=*/true)));
    frames += EncodeFrame(0, Bytes(MakeClock(1, 1, 3)));
    Write("clock", "two-workers-three-iterations", frames);
  }
}

void ReplicaSeeds() {
  // A primary (server 0) runs iteration 0, buffers part of iteration 1 (BSP
  // gradients not yet applied), then exports both groups to server 2.
  const v1::JobSpec job = FuzzJob(2);
  Shard primary(0, job, nullptr);
  v1::PartitionMap solo = JoinMap(1);
  for (v1::PartitionAssignment& a : *solo.mutable_assignments()) a.clear_joining();
  if (!primary.InstallMap(solo).ok()) Fail("primary map 1");
  for (uint32_t group : {0u, 1u}) {
    const std::vector<std::vector<Key>> keys = GroupKeys(job, group);
    for (uint32_t worker : {0u, 1u}) {
      for (uint64_t seq : {1u, 2u}) {
        auto s = primary.Push(MakePush(job, 1, group, worker, seq, 0, keys));
        if (!s.ok()) Fail(absl::StrCat("primary push: ", s.status().message()));
      }
    }
  }
  for (uint32_t worker : {0u, 1u}) {
    if (!primary.Clock(MakeClock(1, worker, 1)).ok()) Fail("primary clock");
  }
  for (uint32_t group : {0u, 1u}) {
    auto s = primary.Push(MakePush(job, 1, group, 0, 3, 1, GroupKeys(job, group)));
    if (!s.ok()) Fail(absl::StrCat("primary push: ", s.status().message()));
  }
  if (!primary.InstallMap(JoinMap(2)).ok()) Fail("primary map 2");
  std::string both;
  for (uint32_t group : {0u, 1u}) {
    auto chunks = primary.ExportGroup(group, 2);
    if (!chunks.ok()) Fail(absl::StrCat("export: ", chunks.status().message()));
    std::string frames;
    for (v1::ReplicaChunk& c : *chunks) {
      c.set_transfer_id(1);
      c.set_primary(0);
      frames += EncodeFrame(0, Bytes(c));
    }
    Write("replica_chunk", absl::StrCat("group", group), frames);
    both += frames;
  }
  Write("replica_chunk", "both-groups", both);
  primary.Shutdown();
}

void CoordinatorSeeds() {
  auto server = [](int id, int port) {
    v1::RegisterServerRequest r;
    r.set_address(absl::StrCat("127.0.0.1:", port));
    r.set_metrics_address(absl::StrCat("127.0.0.1:", port + 1000));
    r.set_requested_id(id);
    return r;
  };
  auto worker = [](int id) {
    v1::RegisterWorkerRequest r;
    r.set_requested_id(id);
    r.set_metrics_address("127.0.0.1:9100");
    return r;
  };
  auto heartbeat = [](v1::MemberRole role, uint32_t id, int64_t clock) {
    v1::HeartbeatRequest r;
    r.set_role(role);
    r.set_id(id);
    r.set_clock(clock);
    r.set_map_version(0);
    return r;
  };
  std::string ticks600("\x58\x02", 2);  // 600 x 10 ms: past the 5 s lease
  std::string frames;
  frames += EncodeFrame(0, Bytes(server(-1, 7001)));
  frames += EncodeFrame(0, Bytes(server(-1, 7002)));
  frames += EncodeFrame(1, Bytes(worker(0)));
  frames += EncodeFrame(1, Bytes(worker(1)));
  frames += EncodeFrame(2, Bytes(heartbeat(v1::MEMBER_ROLE_WORKER, 0, 3)));
  Write("coordinator_register", "barrier", frames);
  // After the barrier: server 1 dies, a new server registers and joins its
  // groups, reports them ready; a worker leaves.
  frames += EncodeFrame(2, Bytes(heartbeat(v1::MEMBER_ROLE_SERVER, 0, -1)));
  frames += EncodeFrame(5, ticks600);
  frames += EncodeFrame(0, Bytes(server(-1, 7003)));
  for (uint32_t group : {0u, 1u}) {
    v1::ReplicaReadyRequest ready;
    ready.set_server_id(2);
    ready.set_group(group);
    frames += EncodeFrame(4, Bytes(ready));
  }
  v1::LeaveRequest leave;
  leave.set_role(v1::MEMBER_ROLE_WORKER);
  leave.set_id(1);
  leave.set_final_clock(3);
  frames += EncodeFrame(3, Bytes(leave));
  frames += EncodeFrame(1, Bytes(worker(1)));
  Write("coordinator_register", "failover-and-rejoin", frames);
  std::string bad;
  bad += EncodeFrame(0, Bytes(server(7, 7001)));
  bad += EncodeFrame(0, Bytes(server(0, 0)));
  bad += EncodeFrame(1, Bytes(worker(-5)));
  Write("coordinator_register", "bad-ids", bad);
}

}  // namespace
}  // namespace cairn::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 1;
  }
  cairn::fuzz::Quiet();
  cairn::fuzz::root = argv[1];
  cairn::fuzz::IdxSeeds();
  cairn::fuzz::CriteoSeeds();
  cairn::fuzz::SafetensorsSeeds();
  cairn::fuzz::CheckpointSeeds();
  cairn::fuzz::ShardSeeds();
  cairn::fuzz::PullReplySeeds();
  cairn::fuzz::ReplicaSeeds();
  cairn::fuzz::CoordinatorSeeds();
  std::printf("seeds written under %s\n", argv[1]);
  return 0;
}
