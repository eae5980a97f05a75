// Starting tables from a .safetensors file: a checkpoint exported with
// ExportSafetensors, read back and cut into partitions (under another number
// of partitions too), loads bit-identical values; malformed files and files
// that do not fit the job are refused with errors naming what is wrong.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/checkpoint/checkpoint_writer.h"
#include "server/checkpoint/safetensors_export.h"
#include "server/checkpoint/safetensors_import.h"
#include "server/optimizer/optimizer.h"
#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn::checkpoint {
namespace {

using cairn::testing::DenseAdagrad;
using cairn::testing::Owned;
using cairn::testing::SparseAdam;
using cairn::testing::TempDir;
using cairn::testing::Train;

constexpr uint32_t kExportPartitions = 4;

// W [7,5]: 35 elements in chunks of 3 (12 chunks, the last of 2 elements).
v1::TableSpec OddDense() { return DenseAdagrad({7, 5}); }

// b [2]: one chunk of 2 elements; every partition but the first is empty.
v1::TableSpec TinyDense() {
  v1::TableSpec t = DenseAdagrad({2});
  t.set_name("b");
  t.set_id(2);
  return t;
}

std::vector<Key> EdgeKeys() { return {0, 1, Key{1} << 63, ~Key{0}}; }

std::vector<Key> Chunks(uint64_t n) {
  std::vector<Key> keys;
  for (Key k = 0; k < n; ++k) keys.push_back(k);
  return keys;
}

std::unique_ptr<Table> MakeTable(const v1::TableSpec& spec, uint32_t partitions) {
  auto table = Table::Create(spec, partitions, Owned(partitions, 1, 0));
  REQUIRE(table.ok());
  return std::move(*table);
}

std::string ReadAll(const Table& table, const std::vector<Key>& keys) {
  std::string out;
  table.Read(KeysToBytes(keys), keys.size(), &out);
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Trained tables W, E, b, written as one store's checkpoint at clock 20 and
// exported to dir/model.safetensors.
struct Exported {
  std::vector<v1::TableSpec> specs = {OddDense(), SparseAdam(), TinyDense()};
  std::vector<std::vector<Key>> keys = {Chunks(12), EdgeKeys(), Chunks(1)};
  std::vector<std::unique_ptr<Table>> tables;
  std::string path;

  explicit Exported(const TempDir& dir) : path(dir.path("model.safetensors")) {
    std::vector<TableShape> shapes;
    std::vector<PartitionData> parts;
    for (size_t t = 0; t < specs.size(); ++t) {
      tables.push_back(MakeTable(specs[t], kExportPartitions));
      Train(*tables[t], keys[t], 3);
      shapes.push_back(ShapeOf(specs[t], tables[t]->SlotsPerElement()));
      for (uint32_t p = 0; p < kExportPartitions; ++p) {
        parts.push_back({specs[t].id(), p, *tables[t]->ExportPartition(p)});
      }
    }
    auto writer = CheckpointWriter::Open(dir.path("server-0"), 0, 1);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(20, kExportPartitions, shapes, parts, WorkerState()).ok());
    writer->reset();
    auto summary = ExportSafetensors({dir.path("server-0")}, path);
    REQUIRE(summary.ok());
    REQUIRE(summary->tensors == 4);
  }
};

// Writes a .safetensors file: header length, `header` verbatim, `data`.
void WriteRaw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof(n));
  out << header << data;
  REQUIRE(out.good());
}

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Writes a well-formed file of `tensors`, laid out back to back.
void WriteTensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  WriteRaw(path, header.dump(), data);
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("tables start from an exported checkpoint with bit-identical values",
          "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import");
  Exported source(dir);
  auto file = ReadSafetensors(source.path);
  REQUIRE(file.ok());
  CHECK(file->metadata.at("cairn.clock") == "20");
  CHECK(file->tensors.size() == 4);
  CHECK(file->tensors.at("W").shape == std::vector<int64_t>{7, 5});
  CHECK(file->tensors.at("E").shape == std::vector<int64_t>{4, 4});
  CHECK(file->tensors.at("E.keys").dtype == "U64");

  // The file does not depend on the exporting job's partitions.
  const uint32_t partitions = GENERATE(1u, kExportPartitions, 7u);
  for (size_t t = 0; t < source.specs.size(); ++t) {
    const v1::TableSpec& spec = source.specs[t];
    INFO("table " << spec.name() << ", " << partitions << " partitions");
    auto target = MakeTable(spec, partitions);
    REQUIRE(ReadAll(*target, source.keys[t]) != ReadAll(*source.tables[t], source.keys[t]));
    uint64_t rows_seen = 0;
    for (uint32_t p = 0; p < partitions; ++p) {
      auto rows = InitialRows(*file, spec, partitions, p, target->SlotsPerElement());
      REQUIRE(rows.ok());
      CHECK(rows->slots_per_element == target->SlotsPerElement());
      CHECK(std::all_of(rows->steps.begin(), rows->steps.end(), [](int64_t s) { return s == 0; }));
      CHECK(std::all_of(rows->slots.begin(), rows->slots.end(), [](float s) { return s == 0.0f; }));
      if (partitions == kExportPartitions) {
        // Same keys, lengths and value bits as the table's own export.
        auto exported = source.tables[t]->ExportPartition(p);
        REQUIRE(exported.ok());
        CHECK(rows->keys == exported->keys);
        CHECK(rows->lengths == exported->lengths);
        CHECK(SameBits(rows->values, exported->values));
      }
      rows_seen += rows->keys.size();
      REQUIRE(target->ImportPartition(p, *rows).ok());
    }
    CHECK(rows_seen == source.keys[t].size());
    CHECK(target->NumKeys() == source.keys[t].size());
    CHECK(ReadAll(*target, source.keys[t]) == ReadAll(*source.tables[t], source.keys[t]));
  }
}

TEST_CASE("with the table's optimizer, rows carry the slots a fresh table starts with",
          "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import-slots");
  Exported source(dir);
  auto file = ReadSafetensors(source.path);
  REQUIRE(file.ok());
  const v1::TableSpec spec = OddDense();  // Adagrad, initial_accumulator 0.1
  auto optimizer = MakeOptimizer(spec.optimizer());
  REQUIRE(optimizer.ok());
  auto fresh = MakeTable(spec, kExportPartitions);
  for (uint32_t p = 0; p < kExportPartitions; ++p) {
    auto rows = InitialRows(*file, spec, kExportPartitions, p, **optimizer);
    REQUIRE(rows.ok());
    auto want = fresh->ExportPartition(p);
    REQUIRE(want.ok());
    CHECK(!rows->slots.empty());
    CHECK(std::all_of(rows->slots.begin(), rows->slots.end(), [](float s) { return s == 0.1f; }));
    CHECK(SameBits(rows->slots, want->slots));
    CHECK(rows->steps == want->steps);
  }
}

TEST_CASE("sparse rows come out in key order whatever the file's order",
          "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import-order");
  const std::vector<Key> keys = {~Key{0}, 5, Key{1} << 63, 0};
  const std::vector<float> values = {4, 4, 5, 5, 6, 6, 7, 7};  // width 2
  WriteTensors(dir.path("e.safetensors"), {{"E", "F32", {4, 2}, FloatsToBytes(values)},
                                           {"E.keys", "U64", {4}, KeysToBytes(keys)}});
  auto file = ReadSafetensors(dir.path("e.safetensors"));
  REQUIRE(file.ok());
  v1::TableSpec spec = SparseAdam();
  spec.set_width(2);
  auto rows = InitialRows(*file, spec, 1, 0, 2);
  REQUIRE(rows.ok());
  CHECK(rows->keys == std::vector<Key>{0, 5, Key{1} << 63, ~Key{0}});
  CHECK(rows->lengths == std::vector<uint32_t>{2, 2, 2, 2});
  CHECK(rows->values == std::vector<float>{7, 7, 5, 5, 6, 6, 4, 4});
  CHECK(rows->slots.size() == 16);
}

TEST_CASE("malformed .safetensors files are refused naming the file and the tensor",
          "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import-bad");
  const std::string path = dir.path("bad.safetensors");
  auto expect = [&](absl::StatusCode code, const std::string& text) {
    auto file = ReadSafetensors(path);
    REQUIRE(!file.ok());
    CHECK(file.status().code() == code);
    CHECK_THAT(Message(file.status()), Catch::StartsWith(path + ": "));
    CHECK_THAT(Message(file.status()), Catch::Contains(text));
  };
  const std::string four = FloatsToBytes({1.0f});

  SECTION("missing file") { expect(absl::StatusCode::kNotFound, "no such file"); }
  SECTION("shorter than the header length") {
    std::ofstream(path, std::ios::binary) << "abc";
    expect(absl::StatusCode::kInvalidArgument,
           "file of 3 bytes is shorter than the 8-byte header length");
  }
  SECTION("header length beyond the file") {
    std::string bytes(8, '\0');
    bytes[1] = 1;  // 256
    std::ofstream(path, std::ios::binary) << bytes << "{}";
    expect(absl::StatusCode::kInvalidArgument,
           "header length 256 runs past the end of the file (2 bytes follow the length)");
  }
  SECTION("an exported file cut short") {
    Exported source(dir);
    std::ifstream in(source.path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 4);
    // Tensors are laid out by name: b (2 floats) comes last.
    expect(absl::StatusCode::kInvalidArgument, "tensor b: data_offsets [");
    expect(absl::StatusCode::kInvalidArgument, "(file truncated?)");
  }
  SECTION("bad JSON") {
    WriteRaw(path, "{\"W\": {\"dtype\": ", "");
    expect(absl::StatusCode::kInvalidArgument, "header is not valid JSON");
  }
  SECTION("JSON that is not an object") {
    WriteRaw(path, "[1, 2]", "");
    expect(absl::StatusCode::kInvalidArgument, "header is not a JSON object");
  }
  SECTION("offsets out of range") {
    WriteRaw(path, R"({"W": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", four);
    expect(absl::StatusCode::kInvalidArgument,
           "tensor W: data_offsets [0,8] run past the 4-byte data buffer");
  }
  SECTION("offsets that end before they begin") {
    WriteRaw(path, R"({"W": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}})", four);
    expect(absl::StatusCode::kInvalidArgument, "tensor W: data_offsets [4,0] end before");
  }
  SECTION("size other than the shape's") {
    WriteRaw(path, R"({"W": {"dtype": "F32", "shape": [3], "data_offsets": [0, 4]}})", four);
    expect(absl::StatusCode::kInvalidArgument,
           "tensor W: F32 [3] needs 12 bytes, data_offsets [0,4] hold 4");
  }
  SECTION("unsupported dtype") {
    WriteRaw(path, R"({"W": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", four);
    expect(absl::StatusCode::kInvalidArgument,
           "tensor W: dtype F16 is not supported (only F32 and U64)");
  }
  SECTION("negative dimension") {
    WriteRaw(path, R"({"W": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", four);
    expect(absl::StatusCode::kInvalidArgument, "tensor W: shape [-1] is not a list");
  }
  SECTION("missing data_offsets") {
    WriteRaw(path, R"({"W": {"dtype": "F32", "shape": [1]}})", four);
    expect(absl::StatusCode::kInvalidArgument, "tensor W: \"data_offsets\" is not [begin, end]");
  }
  SECTION("overlapping tensors") {
    WriteRaw(path,
             R"({"A": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
             R"( "B": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
             std::string(12, '\0'));
    expect(absl::StatusCode::kInvalidArgument, "tensors A [0,8) and B [4,12) overlap");
  }
  SECTION("metadata that is not text") {
    WriteRaw(path, R"({"__metadata__": {"cairn.clock": 20}})", "");
    expect(absl::StatusCode::kInvalidArgument, "\"__metadata__\" entry cairn.clock is not a string");
  }
}

TEST_CASE("a file that does not fit the job's tables is refused naming the table and shapes",
          "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import-fit");
  Exported source(dir);
  auto exported = ReadSafetensors(source.path);
  REQUIRE(exported.ok());
  auto expect = [&](const SafetensorsFile& file, const v1::TableSpec& spec,
                    const std::string& text) {
    auto rows = InitialRows(file, spec, kExportPartitions, 0, 1);
    REQUIRE(!rows.ok());
    CHECK(rows.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(Message(rows.status()), Catch::StartsWith("table " + spec.name() + ": "));
    CHECK_THAT(Message(rows.status()), Catch::Contains(text));
    CHECK_THAT(Message(rows.status()), Catch::Contains(file.path));
  };
  v1::TableSpec sparse = SparseAdam();

  SECTION("table missing") {
    v1::TableSpec missing = OddDense();
    missing.set_name("V");
    expect(*exported, missing, "has no tensor V");
  }
  SECTION("dense shape differs") {
    expect(*exported, DenseAdagrad({7, 4}), "table W: file has [7,5], the job has [7,4]");
    expect(*exported, DenseAdagrad({35}), "table W: file has [7,5], the job has [35]");
  }
  SECTION("sparse width differs") {
    sparse.set_width(5);
    expect(*exported, sparse, "table E: file has [4,4], the job has [n,5]");
  }
  const std::string path = dir.path("e.safetensors");
  const std::string row_bytes = FloatsToBytes(std::vector<float>(12, 1.0f));  // 3 rows of 4
  auto read = [&](const std::vector<RawTensor>& tensors) {
    WriteTensors(path, tensors);
    auto file = ReadSafetensors(path);
    REQUIRE(file.ok());
    return *file;
  };
  SECTION("dtype other than F32") {
    expect(read({{"W", "U64", {7, 5}, std::string(35 * 8, '\0')}}), OddDense(),
           "tensor W is U64, the job needs F32");
  }
  SECTION("keys tensor missing") {
    expect(read({{"E", "F32", {3, 4}, row_bytes}}), sparse, "has no tensor E.keys");
  }
  SECTION("keys of another dtype") {
    expect(read({{"E", "F32", {3, 4}, row_bytes}, {"E.keys", "F32", {3}, std::string(12, '\0')}}),
           sparse, "tensor E.keys is F32, the job needs U64");
  }
  SECTION("keys of another length") {
    expect(read({{"E", "F32", {3, 4}, row_bytes}, {"E.keys", "U64", {2}, KeysToBytes({1, 2})}}),
           sparse, "file has E.keys [2] for 3 rows of E, expected [3]");
  }
  SECTION("duplicate keys") {
    expect(read({{"E", "F32", {3, 4}, row_bytes},
                 {"E.keys", "U64", {3}, KeysToBytes({9, ~Key{0}, 9})}}),
           sparse, "key 9 appears more than once in E.keys");
  }
  SECTION("sparse tensor not 2-D") {
    expect(read({{"E", "F32", {12}, row_bytes}, {"E.keys", "U64", {3}, KeysToBytes({1, 2, 3})}}),
           sparse, "table E: file has [12], the job has [n,4]");
  }
}

TEST_CASE("a request for a partition out of range is refused", "[shard][checkpoint][safetensors]") {
  TempDir dir("cairn-st-import-range");
  Exported source(dir);
  auto file = ReadSafetensors(source.path);
  REQUIRE(file.ok());
  auto rows = InitialRows(*file, OddDense(), kExportPartitions, kExportPartitions, 1);
  CHECK(rows.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(rows.status()), Catch::Contains("table W: partition 4 of 4"));
  CHECK(InitialRows(*file, OddDense(), 0, 0, 1).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cairn::checkpoint
