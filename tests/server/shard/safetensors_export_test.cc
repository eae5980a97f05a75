// Export of a checkpoint as .safetensors, checked with an independent reader
// (read_safetensors.py: Python standard library + numpy).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "server/checkpoint/checkpoint_writer.h"
#include "server/checkpoint/safetensors_export.h"
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

constexpr uint32_t kPartitions = 4;

std::string RunReader(const std::string& file) {
  const std::string cmd = std::string("/usr/bin/python3 ") + CAIRN_SOURCE_DIR +
                          "/tests/server/shard/read_safetensors.py " + file + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  CHECK(pclose(p) == 0);
  return out;
}

std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

// Trains W and E, writes them as two servers' stores under `dir`, and
// returns what read_safetensors.py must print for their export.
std::string WriteTwoStores(const TempDir& dir) {
  auto dense = std::move(*Table::Create(DenseAdagrad(), kPartitions, Owned(kPartitions, 1, 0)));
  auto sparse = std::move(*Table::Create(SparseAdam(), kPartitions, Owned(kPartitions, 1, 0)));
  std::vector<Key> chunks;
  for (Key k = 0; k < 14; ++k) chunks.push_back(k);
  Train(*dense, chunks, 2);
  Train(*sparse, B10Keys(), 2);
  const std::vector<TableShape> shapes = {ShapeOf(DenseAdagrad(), 1), ShapeOf(SparseAdam(), 2)};
  for (uint32_t server = 0; server < 2; ++server) {
    std::vector<PartitionData> parts;
    for (uint32_t p = server; p < kPartitions; p += 2) {
      parts.push_back({0, p, *dense->ExportPartition(p)});
      parts.push_back({1, p, *sparse->ExportPartition(p)});
    }
    auto writer = CheckpointWriter::Open(dir.path("server-" + std::to_string(server)), server, 2);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(20, kPartitions, shapes, parts, WorkerState()).ok());
  }
  // W's 40 floats in element order; E's 102 rows by ascending key (B10Keys
  // is ascending).
  std::string w, e;
  dense->Read(KeysToBytes(chunks), chunks.size(), &w);
  sparse->Read(KeysToBytes(B10Keys()), B10Keys().size(), &e);
  std::ostringstream expected;
  expected << "metadata {\"cairn.clock\": \"20\"}\n"
           << "E F32 102,4 " << Hex(e) << "\n"
           << "E.keys U64 102 " << Hex(KeysToBytes(B10Keys())) << "\n"
           << "W F32 10,4 " << Hex(w) << "\n";
  return expected.str();
}

TEST_CASE("two stores export to one .safetensors file an independent reader parses exactly") {
  TempDir dir("cairn-safetensors");
  const std::string expected = WriteTwoStores(dir);
  auto stores = FindStores(dir.path());
  REQUIRE(stores.ok());
  REQUIRE(stores->size() == 2);
  auto summary = ExportSafetensors(*stores, dir.path("model.safetensors"));
  REQUIRE(summary.ok());
  CHECK(summary->clock == 20);
  CHECK(summary->tensors == 3);
  CHECK(RunReader(dir.path("model.safetensors")) == expected);
}

TEST_CASE("cairnctl export --format safetensors reads the stores directly") {
  TempDir dir("cairn-safetensors-ctl");
  const std::string expected = WriteTwoStores(dir);
  const std::string out = dir.path("ctl.safetensors");
  const std::string cmd = std::string(CAIRN_BINARY_DIR) + "/bin/cairnctl export --format " +
                          "safetensors --from " + dir.path() + " " + out + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(RunReader(out) == expected);
  // A job file without checkpoint.dir, the directory given as the job's
  // processes were given it.
  {
    std::ofstream job(dir.path("job.yaml"));
    job << "cluster: {servers: 2}\n";
  }
  const std::string out_set = dir.path("ctl-set.safetensors");
  const std::string with_set = std::string(CAIRN_BINARY_DIR) + "/bin/cairnctl export --config " +
                               dir.path("job.yaml") + " --set checkpoint.dir=" + dir.path() +
                               " " + out_set + " > /dev/null";
  REQUIRE(std::system(with_set.c_str()) == 0);
  CHECK(RunReader(out_set) == expected);
  const std::string missing = std::string(CAIRN_BINARY_DIR) + "/bin/cairnctl export --from " +
                              dir.path("nope") + " " + out + " 2> /dev/null";
  CHECK(WEXITSTATUS(std::system(missing.c_str())) == 2);  // bad input, as for the coordinator
}

TEST_CASE("an export whose job file's tables differ from the checkpoint's is refused") {
  TempDir dir("cairn-safetensors-expected");
  const std::string expected = WriteTwoStores(dir);
  auto stores = FindStores(dir.path());
  REQUIRE(stores.ok());
  const std::string out = dir.path("model.safetensors");
  // The job's own tables (other optimizers, chunks or placement do not
  // change what is exported).
  std::vector<TableShape> same = {ShapeOf(DenseAdagrad(), 0), ShapeOf(SparseAdam(), 0)};
  same[0].chunk_size = 5;
  same[0].partition_offset = 3;
  auto summary = ExportSafetensors(*stores, out, &same);
  REQUIRE(summary.ok());
  CHECK(RunReader(out) == expected);
  std::filesystem::remove(out);

  struct Case {
    std::vector<TableShape> tables;
    std::string message;
  };
  TableShape wider = ShapeOf(SparseAdam(), 2);
  wider.width = 8;
  TableShape other = ShapeOf(DenseAdagrad(), 1);
  other.name = "V";
  const std::vector<Case> cases = {
      {{ShapeOf(DenseAdagrad({10, 5}), 1), ShapeOf(SparseAdam(), 2)},
       "table W: the checkpoint at clock 20 has dense [10,4], the job file has dense [10,5]"},
      {{ShapeOf(DenseAdagrad(), 1), wider},
       "table E: the checkpoint at clock 20 has sparse width 4, the job file has sparse width 8"},
      {{ShapeOf(DenseAdagrad(), 1)},
       "table E: the checkpoint at clock 20 has sparse width 4, the job file has no such table"},
      {{ShapeOf(DenseAdagrad(), 1), ShapeOf(SparseAdam(), 2), other},
       "table V: the job file has dense [10,4], the checkpoint at clock 20 has no such table"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    summary = ExportSafetensors(*stores, out, &c.tables);
    CHECK(summary.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(summary.status().message()) == c.message);
    CHECK(!std::filesystem::exists(out));
    CHECK(!std::filesystem::exists(out + ".tmp"));
  }

  // An output directory that does not exist is named, and nothing written.
  summary = ExportSafetensors(*stores, dir.path("no/such/dir/model.safetensors"));
  CHECK(summary.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(summary.status().message()),
             Catch::Contains("directory " + dir.path("no/such/dir") + " does not exist"));

  // cairnctl: the job file's tables checked, exit 2 naming the table.
  auto job = [&dir](const std::string& name, const std::string& w_shape) {
    std::ofstream f(dir.path(name));
    f << "cluster: {servers: 2}\ntables:\n"
      << "  - {name: W, kind: dense, shape: " << w_shape << ", chunk_size: 3,\n"
      << "     optimizer: {type: adagrad, learning_rate: 0.1}}\n"
      << "  - {name: E, kind: sparse, width: 4, optimizer: {type: adam, learning_rate: 0.01}}\n";
    return dir.path(name);
  };
  auto ctl = [&dir](const std::string& config, const std::string& to) {
    const std::string cmd = std::string(CAIRN_BINARY_DIR) + "/bin/cairnctl export --config " +
                            config + " --set checkpoint.dir=" + dir.path() + " " + to + " > " +
                            dir.path("ctl.out") + " 2>&1";
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  CHECK(ctl(job("same.yaml", "[10, 4]"), out) == 0);
  CHECK(RunReader(out) == expected);
  const std::string refused = dir.path("refused.safetensors");
  CHECK(ctl(job("other.yaml", "[10, 5]"), refused) == 2);
  std::ifstream said(dir.path("ctl.out"));
  const std::string text((std::istreambuf_iterator<char>(said)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("table W: the checkpoint at clock 20 has dense [10,4], the "
                                   "job file has dense [10,5]"));
  CHECK_THAT(text, Catch::Contains("--from DIR"));
  CHECK(!std::filesystem::exists(refused));
}

TEST_CASE("export names the missing partitions when a store is absent") {
  TempDir dir("cairn-safetensors-missing");
  auto dense = std::move(*Table::Create(DenseAdagrad(), kPartitions, Owned(kPartitions, 2, 0)));
  std::vector<PartitionData> parts;
  for (uint32_t p = 0; p < kPartitions; p += 2) parts.push_back({0, p, *dense->ExportPartition(p)});
  {
    auto writer = CheckpointWriter::Open(dir.path("server-0"), 0, 2);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(7, kPartitions, {ShapeOf(DenseAdagrad(), 1)}, parts, WorkerState()).ok());
  }
  auto summary = ExportSafetensors({dir.path("server-0")}, dir.path("model.safetensors"));
  CHECK(summary.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(summary.status().message()),
             Catch::Contains("the newest checkpoint (clock 7) lacks table/partition W/1, W/3"));
  CHECK(!std::filesystem::exists(dir.path("model.safetensors")));
  CHECK(FindStores(dir.path("nope")).status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::checkpoint
