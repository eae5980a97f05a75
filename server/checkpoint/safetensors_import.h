// Reads a .safetensors file and cuts it into the partitions of a job's
// tables, so that a job can start from the file's values (the layout
// safetensors_export.h writes; format: github.com/huggingface/safetensors,
// README "Format").
//
// Tensors a table is read from: a dense table T is tensor "T", F32, of exactly
// the table's shape, elements in row-major order; a sparse table E is tensor
// "E", F32 [n, width], and tensor "E.keys", U64 [n], row i holding key
// keys[i] (any order, no duplicates). Other tensors are ignored.
#ifndef CAIRN_SERVER_CHECKPOINT_SAFETENSORS_IMPORT_H_
#define CAIRN_SERVER_CHECKPOINT_SAFETENSORS_IMPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cairn/v1/types.pb.h"
#include "server/optimizer/optimizer.h"
#include "server/checkpoint/partition_rows.h"

namespace cairn::checkpoint {

// One tensor's header entry.
struct SafetensorsTensor {
  std::string dtype;           // "F32" or "U64" (4 or 8 bytes, little-endian)
  std::vector<int64_t> shape;  // [] is a scalar (one element)
  uint64_t begin = 0;          // [begin, end): bytes of SafetensorsFile::data
  uint64_t end = 0;
};

// A whole .safetensors file in memory. Immutable after ReadSafetensors;
// safe to share.
struct SafetensorsFile {
  std::string path;                             // as given to ReadSafetensors
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
  std::map<std::string, SafetensorsTensor> tensors;
  std::string data;  // the byte buffer that follows the header

  // The tensor named `name`, or nullptr.
  const SafetensorsTensor* Find(const std::string& name) const;
  // The bytes of `tensor` (one of `tensors`), (end - begin) bytes of `data`.
  absl::string_view Bytes(const SafetensorsTensor& tensor) const;
};

// Reads and checks the file at `path`: the u64 little-endian header length
// N, N bytes of JSON header (an object: tensor name -> {"dtype", "shape",
// "data_offsets"}, plus an optional "__metadata__" of strings), then the
// byte buffer. Every tensor must have dtype F32 or U64, non-negative dims,
// data_offsets [begin, end] with begin <= end <= buffer size and end - begin
// = product(shape) * dtype size, and no two tensors' bytes may overlap
// (bytes no tensor covers are allowed). Reads the whole file into memory.
//
// Errors: NotFound when `path` does not exist or cannot be opened;
// InvalidArgument naming the file (and the tensor, when one is at fault)
// for a short file, a header length past the end of the file, JSON that
// does not parse or has the wrong structure, another dtype, bad offsets,
// a size that does not match the shape, overlapping tensors.
absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

// The rows of partition `partition` (of `num_partitions`) of table `table`
// taken from `file`, in the form Table::ImportPartition accepts: dense, one
// row per chunk of the partition's chunk range (key = chunk index, length =
// chunk_size or the last chunk's remainder; no rows when the range is empty);
// sparse, one row of `width` floats per key of the file that SparsePartition
// puts in `partition`, ascending key. Values are the file's floats, bit for
// bit; every update count (steps) is 0; optimizer slots are
// `slots_per_element` floats per element, all zero.
//
// Zero slots match a fresh table for SGD (with or without momentum) and Adam,
// not for Adagrad with initial_accumulator > 0: use the overload below to get
// the slots a fresh table starts with.
//
// Errors: InvalidArgument for a bad request (num_partitions 0, partition out
// of range, slots_per_element < 0, a dense table without shape or chunk_size,
// a sparse table without width, unknown kind); FailedPrecondition naming the
// table when the file does not fit it: tensor missing, dtype not F32 (keys:
// U64), dense shape differs ("table W: file has [10,5], the job has [10,4]"),
// sparse tensor not 2-D or of another width, keys tensor missing, not 1-D or
// of another length than the rows, a key present twice.
// Each call scans all of a sparse table's keys (O(n) per partition).
// Thread-safe: reads `file` only.
absl::StatusOr<PartitionRows> InitialRows(const SafetensorsFile& file,
                                          const v1::TableSpec& table,
                                          uint32_t num_partitions, uint32_t partition,
                                          int slots_per_element);

// As above, with the slots `optimizer` (the table's) gives a fresh block:
// Optimizer::InitSlots per dense chunk and per sparse row, as Table::Create
// and a sparse row's first push do.
absl::StatusOr<PartitionRows> InitialRows(const SafetensorsFile& file,
                                          const v1::TableSpec& table,
                                          uint32_t num_partitions, uint32_t partition,
                                          const Optimizer& optimizer);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_SAFETENSORS_IMPORT_H_
