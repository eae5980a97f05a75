// Exports a checkpoint, read straight from the servers' stores, as one
// .safetensors file (format: github.com/huggingface/safetensors, README
// "Format": u64 little-endian header length N, N bytes of JSON header padded
// with spaces, then the tensors' bytes; each header entry gives dtype, shape
// and [begin, end) offsets into the byte buffer).
//
// Tensors: a dense table T becomes "T", F32 with the table's shape; a sparse
// table E becomes "E", F32 [n, width] (rows created so far, ascending key)
// and "E.keys", U64 [n]. Optimizer slots are not exported. The header's
// "__metadata__" holds "cairn.clock" (the checkpoint's clock, as text).
#ifndef CAIRN_SERVER_CHECKPOINT_SAFETENSORS_EXPORT_H_
#define CAIRN_SERVER_CHECKPOINT_SAFETENSORS_EXPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/checkpoint/checkpoint_codec.h"

namespace cairn::checkpoint {

// The store directories under `root`: `root` itself when it holds a store,
// else each subdirectory that does, sorted. NotFound naming `root` when it
// does not exist or holds no store.
absl::StatusOr<std::vector<std::string>> FindStores(const std::string& root);

struct ExportSummary {
  int64_t clock = 0;
  uint64_t tensors = 0;
  uint64_t bytes = 0;  // file size
};

// Writes the newest clock whose checkpoints, over all `stores`, cover every
// partition of every table, to `out_path` (written to out_path + ".tmp",
// then renamed). With `expected` (the tables of the job file the caller was
// given), the checkpoint's tables must be those, by name, kind and shape
// (dense) or width (sparse); optimizer slots and placement are not
// compared, as they are not exported. Errors: NotFound (no store, no
// checkpoint); FailedPrecondition when no clock covers all partitions
// (naming the newest clock and its missing table partitions) or stores
// disagree on tables; InvalidArgument naming the table and both shapes when
// `expected` differs, or naming `out_path`'s directory when it does not
// exist; DataLoss from the reads; Unavailable when the file cannot be
// written. Nothing is written on an error.
absl::StatusOr<ExportSummary> ExportSafetensors(const std::vector<std::string>& stores,
                                                const std::string& out_path,
                                                const std::vector<TableShape>* expected = nullptr);

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_SAFETENSORS_EXPORT_H_
