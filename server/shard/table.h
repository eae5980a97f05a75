// One table's partitions held by this server: values, optimizer slots and
// per-key update counts, with request validation.
//
// Dense tables hold each owned partition's chunk range as one contiguous
// block; a key is a chunk index and its value is `chunk_size` floats (the last
// chunk may be shorter). Sparse tables hold embedding rows of `width` floats
// keyed by any uint64, created on first push by the table's initializer; a
// pull of a row never pushed returns the initializer's values without
// creating it.
//
// Thread-safe: reads take a shared lock, updates an exclusive one.
#ifndef CAIRN_SERVER_SHARD_TABLE_H_
#define CAIRN_SERVER_SHARD_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "common/value_pieces.h"
#include "server/shard/grad_buffer.h"
#include "server/optimizer/optimizer.h"
#include "server/checkpoint/partition_rows.h"

namespace cairn {

class ColdRowStore;
class ForkJoin;

// True when the `n` keys at `keys` are strictly ascending, hence distinct
// (the client sends a dense table's chunks in order). Thread-safe (pure).
bool KeysAscending(const std::string& keys, size_t n);

class Table {
 public:
  virtual ~Table() = default;

  // Builds the table for the partitions `owned` (size = P, true = held here).
  // A sparse table with spec.cold_tier keeps its evicted rows in `cold`
  // (cold_rows.h; not owned; outlives the table). InvalidArgument for a bad
  // spec (optimizer, init, shape), or a cold_tier table without a store.
  // A dense table runs each update or read of ForkJoin::kMinSplitBytes or
  // more in pieces on its caller and `helper` (fork_join.h; not owned;
  // outlives the table; null: all on the caller).
  static absl::StatusOr<std::unique_ptr<Table>> Create(const v1::TableSpec& spec,
                                                       uint32_t num_partitions,
                                                       const std::vector<bool>& owned,
                                                       ColdRowStore* cold = nullptr,
                                                       ForkJoin* helper = nullptr);

  const v1::TableSpec& spec() const { return spec_; }

  // Checks `keys` (count n) for this server: dense keys < num_chunks,
  // every key in a partition held here. Returns the number of floats their
  // values take. InvalidArgument naming table and key; FailedPrecondition
  // ("partition P of table T is not held by this server") for a key routed here
  // under another map.
  virtual absl::StatusOr<uint64_t> CheckKeys(const std::string& keys, size_t n) const = 0;
  // The floats the values of `keys` (count n, already checked) take, as
  // CheckKeys counts them, without checking again.
  virtual uint64_t ValueFloats(const std::string& keys, size_t n) const = 0;
  // The floats of `key`'s row (already checked): a dense chunk's length (the
  // last may be shorter), a sparse table's width.
  virtual uint32_t RowLength(Key key) const = 0;

  // Appends the current values of `keys` (already checked) to `out`.
  virtual void Read(const std::string& keys, size_t n, std::string* out) const = 0;
  // The same values written to `out`, which has room for the floats
  // CheckKeys counts (the same-host path writes them into a worker's shared
  // region, server/shard/rpc/shared_regions.h).
  virtual void ReadTo(const std::string& keys, size_t n, float* out) const = 0;

  // Adds the gradient rows of a push (keys checked; `values` holds the floats
  // CheckKeys counted, float32, 4-byte aligned) to `buffer`, summing
  // repeated keys.
  virtual void Gather(const std::string& keys, size_t n, absl::string_view values,
                      GradBuffer* buffer) const = 0;

  // Applies the optimizer once to every row of `grads`.
  virtual void Apply(const GradBuffer& grads) = 0;

  // Apply on every gradient multiplied by `grad_scale` (each product
  // rounded to float; a BSP mean's 1 / workers): the bits of Apply on the
  // buffer scaled first. This default scales `grads` in place, then
  // applies it; a dense table folds the product into its update's pass
  // and leaves `grads` as it is.
  virtual void ApplyScaled(GradBuffer& grads, float grad_scale) {
    if (grad_scale != 1.0f) grads.Scale(grad_scale);
    Apply(grads);
  }

  // Applies a push whose `n` keys are all distinct straight from its bytes,
  // in their order (keys checked; `values` as for Gather): the same updates,
  // bit for bit, as Gather into an empty buffer and Apply, without copying
  // the gradient.
  virtual void ApplyUnique(const std::string& keys, size_t n, absl::string_view values) = 0;
  // ApplyUnique, then the rows' new values written to `out` as ReadTo
  // writes them (the same keys, in their order). This default does the
  // two one after the other; a dense table writes each chunk as its
  // update leaves it, while the chunk is still in the cache.
  virtual void ApplyUniqueAndRead(const std::string& keys, size_t n, absl::string_view values,
                                  float* out) {
    ApplyUnique(keys, n, values);
    ReadTo(keys, n, out);
  }

  // The same for a push whose keys may repeat or come in any order: applies
  // it straight from its bytes and returns true when its `n` keys are
  // distinct; returns false, with no row updated, when one repeats or the
  // table cannot tell without gathering (the caller then gathers the push,
  // summing repeats: B07). This default always returns false; a sparse
  // table finds repeats itself.
  virtual bool ApplyIfDistinct(const std::string& /*keys*/, size_t /*n*/,
                               absl::string_view /*values*/) {
    return false;
  }

  // The job's iterations below `clock` are closed (the shard calls this
  // each time its closed clock moves up, after applying what closed). A
  // sparse table with a time-to-live (TableSpec.ttl_clocks) deletes the
  // rows not updated since; this default does nothing. Thread-safe.
  virtual void AdvanceClock(int64_t /*clock*/) {}

  // Keys (chunks or rows) held, and value bytes held.
  virtual uint64_t NumKeys() const = 0;
  virtual uint64_t NumValueBytes() const = 0;

  // Keys held in the partitions `in` marks (indexed by partition; a
  // partition past its end counts as unmarked), and their value bytes;
  // sparse: rows in memory, as NumKeys. Dense: from the ranges; sparse:
  // one pass over the rows under the table's reader lock (pushes wait for
  // it; for a status call, not the data path). Thread-safe.
  struct KeyCount {
    uint64_t keys = 0;
    uint64_t value_bytes = 0;
  };
  virtual KeyCount CountKeys(const std::vector<bool>& in) const = 0;

  // Copies every row of partition `partition` held here (values, slots,
  // update counts; dense: every chunk of its range, sparse: every row created
  // so far) in ascending key order; a dense partition with no chunks (P above
  // the chunk count) exports no rows. FailedPrecondition naming the table
  // when the partition is not held here.
  virtual absl::StatusOr<PartitionRows> ExportPartition(uint32_t partition) const = 0;

  // Loads rows exported by ExportPartition (maybe on another server, under
  // another number of servers) into partition `partition`, held here. Dense:
  // the rows must be exactly the partition's chunks and replace their state.
  // Sparse: the partition must hold no rows yet; each key must belong to it.
  // Checks everything before changing anything. Errors: FailedPrecondition
  // (partition not held; sparse partition not empty), InvalidArgument naming
  // the table, key and the expected and found lengths.
  virtual absl::Status ImportPartition(uint32_t partition, const PartitionRows& rows) = 0;

  // The partition of `key` (a dense chunk index < the chunk count, or any
  // sparse key).
  uint32_t PartitionOf(Key key) const;

  // Starts holding partition `partition` (a server joining a replica group):
  // dense chunks are created from the initializer, to be replaced by
  // ImportPartition; a sparse partition starts empty. No-op when held.
  // Thread-safe against every other call.
  virtual void AddPartition(uint32_t partition) = 0;

  // Float32 slots per element of this table's optimizer.
  int SlotsPerElement() const { return optimizer_->SlotsPerElement(); }

 protected:
  Table(const v1::TableSpec& spec, uint32_t num_partitions,
        std::unique_ptr<Optimizer> optimizer)
      : spec_(spec), num_partitions_(num_partitions), optimizer_(std::move(optimizer)) {}

  // Constant after construction.
  const v1::TableSpec spec_;
  const uint32_t num_partitions_;
  const std::unique_ptr<Optimizer> optimizer_;
};

// InvalidArgument unless `rows` is self-consistent for table `name` with
// `slots_per_element` slots: one length and step per key, each step in
// [0, 2^63-2], values and slots of the summed lengths.
absl::Status CheckRowsShape(const std::string& name, const PartitionRows& rows,
                            int slots_per_element);

// True when none of the `n` float32 values at `floats` is NaN or infinite.
// Thread-safe (pure).
bool AllFinite(const char* floats, size_t n);

// InvalidArgument naming the table when `values` (n floats) holds NaN or Inf
// and the table's policy rejects them; names the first offending key.
// Values of ForkJoin::kMinSplitBytes or more are checked in pieces on this
// thread and `helper` (null: all on this thread). `first`: the offset, in
// floats, of values[0] among the values of `keys` (a piece of a push; the
// error names the push's offset and key).
absl::Status CheckFinite(const v1::TableSpec& spec, const std::string& keys,
                         absl::string_view values, uint64_t floats_per_key,
                         ForkJoin* helper = nullptr, uint64_t first = 0);

// CheckFinite of float32 values lying in `pieces` (common/value_pieces.h;
// any alignment, a value may straddle two pieces; their bytes a multiple
// of 4), on this thread: the same result.
absl::Status CheckFinite(const v1::TableSpec& spec, const std::string& keys,
                         const ValuePieces& pieces, uint64_t floats_per_key);

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_TABLE_H_
