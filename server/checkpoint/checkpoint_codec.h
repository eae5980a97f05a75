// What a checkpoint holds, and its value encodings (docs/checkpoint-format.md).
#ifndef CAIRN_SERVER_CHECKPOINT_CHECKPOINT_CODEC_H_
#define CAIRN_SERVER_CHECKPOINT_CHECKPOINT_CODEC_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "server/checkpoint/partition_rows.h"

namespace cairn::checkpoint {

// A table's identity and shape as the checkpoint saw it; restore compares it
// with the job's (CheckTablesMatch).
struct TableShape {
  uint32_t id = 0;
  std::string name;
  int32_t kind = 0;               // v1::TableKind
  std::vector<int64_t> shape;     // dense
  int64_t chunk_size = 0;         // dense
  int64_t width = 0;              // sparse
  int32_t slots_per_element = 0;  // optimizer slots
  uint32_t partition_offset = 0;  // dense: TableSpec.partition_offset (0 in format 1)

  bool operator==(const TableShape&) const = default;
};

// `spec`'s shape with `slots_per_element` optimizer slots.
TableShape ShapeOf(const v1::TableSpec& spec, int slots_per_element);

// "dense [10,4] chunk_size 16 slots 1" / "sparse width 4 slots 2".
std::string DescribeShape(const TableShape& shape);

// One partition's entry in a manifest.
struct PartitionEntry {
  uint32_t table_id = 0;
  uint32_t partition = 0;
  uint64_t num_keys = 0;
  uint64_t bytes = 0;     // encoded value size
  uint64_t checksum = 0;  // XXH64 of the encoded value

  bool operator==(const PartitionEntry&) const = default;
};

// A checkpoint's manifest: written in the same WriteBatch as its data.
struct Manifest {
  uint64_t id = 0;            // increasing per store
  int64_t clock = 0;          // the cut: every update of iterations < clock is in
  uint32_t server_id = 0;     // the writer (informational only)
  uint32_t num_partitions = 0;
  int64_t unix_millis = 0;    // wall time of the write
  std::vector<TableShape> tables;
  std::vector<PartitionEntry> partitions;
  uint64_t workers_checksum = 0;  // XXH64 of the 'W' value

  bool operator==(const Manifest&) const = default;
};

// Per-worker clocks and push sequence floors (every sequence <= floor was
// applied). Restore may re-initialise these from `clock` when the number of
// workers changes (field case B10).
struct WorkerState {
  std::map<uint32_t, int64_t> clocks;
  std::map<uint32_t, uint64_t> sequence_floors;

  bool operator==(const WorkerState&) const = default;
};

std::string EncodeRows(const PartitionRows& rows);
std::string EncodeManifest(const Manifest& manifest);
std::string EncodeWorkers(const WorkerState& workers);

// Decoders: DataLoss naming `what` ("checkpoint 3 table E partition 5") when
// the bytes are short, trailing, of another format version or inconsistent.
absl::StatusOr<PartitionRows> DecodeRows(const std::string& bytes, const std::string& what);
absl::StatusOr<Manifest> DecodeManifest(const std::string& bytes, const std::string& what);
absl::StatusOr<WorkerState> DecodeWorkers(const std::string& bytes, const std::string& what);

// XXH64 (seed 0, common/hash.h) of `bytes`.
uint64_t Checksum(const std::string& bytes);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_CHECKPOINT_CODEC_H_
