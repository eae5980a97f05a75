// A server's cold tier (TableSpec.cold_tier): the sparse rows its tables
// evicted from memory, kept in a RocksDB store of this incarnation so that
// a table can be larger than memory. SparseTable puts a row here when it
// evicts it and takes it back at the row's next pull or push, with its
// values, optimizer slots and update count: the row goes on as if it had
// never left.
//
// The store lives as long as the Shard that made it: it is created empty
// (rows of an earlier incarnation are stale: a restarted server gets its
// partitions from a backup or a checkpoint, which carry both tiers) and its
// directory is deleted when it closes.
//
// Layout: one key per row, table id (4 bytes) then the row's key (8 bytes),
// both big-endian, so one table's rows are contiguous and in key order; the
// value is the update count (8 bytes), then the row's floats, then its
// optimizer slots' floats (host order).
#ifndef CAIRN_SERVER_SHARD_COLD_ROWS_H_
#define CAIRN_SERVER_SHARD_COLD_ROWS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/bytes.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace cairn {

// Thread-safe (RocksDB is); a row is written by the one table that owns it,
// under that table's lock.
class ColdRowStore {
 public:
  // RocksDB's own memory when no budget is given: block cache, index and
  // filter blocks, and memtables together.
  static constexpr uint64_t kDefaultMemoryBytes = uint64_t{64} << 20;

  // Creates `dir` (deleting what it held) and opens the store there, with
  // RocksDB's own memory held to about `memory_bytes` (at least 4 MiB): one
  // LRU block cache of that size holds the data, index and filter blocks,
  // and the memtables are charged to it too, up to half of it (RocksDB's
  // WriteBufferManager), so the store's memory does not grow with the rows
  // it holds. Internal naming the directory and RocksDB's reason on
  // failure.
  static absl::StatusOr<std::unique_ptr<ColdRowStore>> Open(
      const std::string& dir, uint64_t memory_bytes = kDefaultMemoryBytes);
  // Closes the store and deletes its directory.
  ~ColdRowStore();

  // A row: `values` (the row) and `slots` (its optimizer slots), updated
  // `step` times. The spans are read during Put only.
  struct Row {
    Key key;
    int64_t step;
    absl::Span<const float> values;
    absl::Span<const float> slots;
  };

  // Stores `rows` of table `table` in one write, replacing older copies.
  absl::Status Put(uint32_t table, absl::Span<const Row> rows);

  // Reads the row into `values` and `slots` (sized as the table's rows) and
  // `step`; with `remove`, deletes it from the store. false when the store
  // has no such row. DataLoss naming the table and key when the stored
  // row's size is not the one asked for; Internal on RocksDB errors.
  absl::StatusOr<bool> Get(uint32_t table, Key key, bool remove, int64_t* step,
                           absl::Span<float> values, absl::Span<float> slots);

  // Reads the values (not the slots) of the rows `keys` of `table`, each
  // row `values_per_row` floats, in one batched lookup (RocksDB MultiGet):
  // row i into values[i * values_per_row ...]. found[i] tells whether the
  // store held keys[i]; rows not held leave their values untouched.
  // DataLoss naming the table and key for a row of the wrong size
  // (`slots_per_row` floats of slots are expected after the values);
  // Internal on RocksDB errors.
  absl::Status ReadValues(uint32_t table, absl::Span<const Key> keys, size_t values_per_row,
                          size_t slots_per_row, absl::Span<float> values,
                          std::vector<bool>* found) const;

  // Calls `row` for every stored row of `table`, in ascending key order,
  // with views valid during the call. Stops at the first error `row`
  // returns. DataLoss for a row of the wrong size; Internal on RocksDB
  // errors.
  using RowFn = std::function<absl::Status(Key key, int64_t step, absl::Span<const float> values,
                                           absl::Span<const float> slots)>;
  absl::Status ForEach(uint32_t table, size_t values_per_row, size_t slots_per_row,
                       const RowFn& row) const;

  // Deletes the rows of `table` whose keys satisfy `drop`; the count.
  absl::StatusOr<uint64_t> DeleteIf(uint32_t table, const std::function<bool(Key)>& drop);

  const std::string& dir() const { return dir_; }

 private:
  ColdRowStore(std::string dir, std::unique_ptr<rocksdb::DB> db);

  const std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_COLD_ROWS_H_
