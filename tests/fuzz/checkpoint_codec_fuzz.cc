// Fuzz target: the checkpoint codec's decoders (server/checkpoint/
// checkpoint_codec.h), as a restore reads a stored value, and a decoded
// partition's rows loaded into a table (Table::ImportPartition), as a
// restore and a replica transfer do.
//
// Input: byte 0 picks the value and the partition; the rest is the value.
//   byte0 % 3 == 0: a "rows" value -> DecodeRows, then ImportPartition into
//                   partition (byte0 >> 2) % 4 of each table of fuzz_shard.h
//   byte0 % 3 == 1: a manifest body; the target appends its XXH64 so the
//                   checksum passes and the decoder's parsing is reached
//   byte0 % 3 == 2: a worker-state value -> DecodeWorkers
//
// Checks beyond the sanitizers: a value of the current format version that
// decodes re-encodes to the same bytes (rows, manifest); a refused import
// leaves the partition as it was.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/shard/table.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool CurrentVersion(const std::string& bytes) {
  uint32_t version = 0;
  if (bytes.size() < sizeof(version)) return false;
  std::memcpy(&version, bytes.data(), sizeof(version));
  return version == cairn::checkpoint::kFormatVersion;
}

void ImportEverywhere(const cairn::PartitionRows& rows, uint32_t partition) {
  using namespace cairn;
  static const v1::JobSpec job = fuzz::FuzzJob();
  const std::vector<bool> owned(fuzz::kPartitions, true);
  for (const v1::TableSpec& spec : job.tables()) {
    absl::StatusOr<std::unique_ptr<Table>> table = Table::Create(spec, fuzz::kPartitions, owned);
    if (!table.ok()) {
      fuzz::Fail(absl::StrCat("table ", spec.name(), ": ", table.status().message()));
    }
    absl::StatusOr<PartitionRows> before = (*table)->ExportPartition(partition);
    if (!before.ok()) fuzz::Fail(absl::StrCat("export: ", before.status().message()));
    absl::Status imported = (*table)->ImportPartition(partition, rows);
    absl::StatusOr<PartitionRows> after = (*table)->ExportPartition(partition);
    if (!after.ok()) fuzz::Fail(absl::StrCat("export: ", after.status().message()));
    if (!imported.ok() &&
        checkpoint::EncodeRows(*before) != checkpoint::EncodeRows(*after)) {
      fuzz::Fail(absl::StrCat("a refused import changed table ", spec.name(), ": ",
                              imported.ToString()));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (pick % 3) {
    case 0: {
      absl::StatusOr<PartitionRows> rows = checkpoint::DecodeRows(bytes, "fuzz rows");
      if (!rows.ok()) return 0;
      if (CurrentVersion(bytes) && checkpoint::EncodeRows(*rows) != bytes) {
        fuzz::Fail("decoded rows re-encode to other bytes");
      }
      ImportEverywhere(*rows, (pick >> 2) % fuzz::kPartitions);
      break;
    }
    case 1: {
      const uint64_t sum = Xxh64(bytes);
      bytes.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
      absl::StatusOr<checkpoint::Manifest> m = checkpoint::DecodeManifest(bytes, "fuzz manifest");
      if (m.ok() && CurrentVersion(bytes) && checkpoint::EncodeManifest(*m) != bytes) {
        fuzz::Fail("a decoded manifest re-encodes to other bytes");
      }
      break;
    }
    default:
      (void)checkpoint::DecodeWorkers(bytes, "fuzz workers");
  }
  return 0;
}
