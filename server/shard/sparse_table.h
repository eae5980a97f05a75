// A sparse table's owned embedding rows (see table.h).
#ifndef CAIRN_SERVER_SHARD_SPARSE_TABLE_H_
#define CAIRN_SERVER_SHARD_SPARSE_TABLE_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/unaligned_float.h"
#include "server/shard/cold_rows.h"
#include "server/shard/row_eviction.h"
#include "server/shard/table.h"

namespace cairn {

class PieceRows;

// Thread-safe.
class SparseTable final : public Table {
 public:
  // `cold`: the cold tier for evicted rows (cold_rows.h), or null.
  SparseTable(const v1::TableSpec& spec, uint32_t num_partitions,
              const std::vector<bool>& owned, std::unique_ptr<Optimizer> optimizer,
              ColdRowStore* cold = nullptr);

  absl::StatusOr<uint64_t> CheckKeys(const std::string& keys, size_t n) const override;
  uint64_t ValueFloats(const std::string& /*keys*/, size_t n) const override {
    return static_cast<uint64_t>(n) * width_;
  }
  uint32_t RowLength(Key /*key*/) const override { return width_; }
  void Read(const std::string& keys, size_t n, std::string* out) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReadTo(const std::string& keys, size_t n, float* out) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Gather(const std::string& keys, size_t n, absl::string_view values,
              GradBuffer* buffer) const override;
  void ApplyUnique(const std::string& keys, size_t n, absl::string_view values) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Apply(const GradBuffer& grads) override ABSL_LOCKS_EXCLUDED(mu_);
  // Keys in any order: each key's row is found (or created) once and marked
  // with this push's stamp, so a repeat is seen without a second hash
  // lookup; then every row is updated from the push's bytes. Tables with
  // admission or a cold tier return false (a row's first push decides
  // whether it is created): their unsorted pushes are gathered.
  bool ApplyIfDistinct(const std::string& keys, size_t n, absl::string_view values) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Rows a push's update hands the optimizer at once (ApplyRows).
  static constexpr size_t kUpdateBatch = 16;
  // Gather, ApplyUnique and ApplyIfDistinct with the rows read from the
  // pieces gRPC received them in (piece_rows.h), in key order: the same
  // updates, to the same bits. `rows` must hold kUpdateBatch copied rows.
  void Gather(const std::string& keys, size_t n, PieceRows* rows, GradBuffer* buffer) const;
  void ApplyUnique(const std::string& keys, size_t n, PieceRows* rows) ABSL_LOCKS_EXCLUDED(mu_);
  bool ApplyIfDistinct(const std::string& keys, size_t n, PieceRows* rows)
      ABSL_LOCKS_EXCLUDED(mu_);
  // With a time-to-live: deletes the rows whose last update came more than
  // ttl_clocks clocks before `clock` (a row updated while the closed clock
  // was c goes at the first scan at a clock above c + ttl_clocks). Scans
  // run every max(1, ttl_clocks / 8) clocks; each is O(rows held). Rows
  // created or imported before the first call count as updated at
  // `clock` - 1 of the first call (a resumed job's rows start fresh).
  void AdvanceClock(int64_t clock) override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NumKeys() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Ids seen but not yet admitted (TableSpec.min_count), and pushes of
  // them counted and dropped so far. Thread-safe.
  uint64_t NumPending() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NotAdmittedPushes() const { return not_admitted_.load(std::memory_order_relaxed); }
  // Rows evicted so far (TableSpec.capacity_rows, row_eviction.h).
  uint64_t EvictedRows() const { return evicted_.load(std::memory_order_relaxed); }
  // Ids dropped from the admission wait list because more than
  // capacity_rows waited (row_eviction.h).
  uint64_t DroppedPending() const { return dropped_pending_.load(std::memory_order_relaxed); }
  // Rows created for new ids so far (admitted: at an id's first push, or
  // its min_count-th), and rows written to the cold tier so far.
  uint64_t AdmittedRows() const { return admitted_.load(std::memory_order_relaxed); }
  uint64_t SpilledRows() const { return spilled_.load(std::memory_order_relaxed); }
  // Rows deleted past their time-to-live (TableSpec.ttl_clocks) so far.
  uint64_t ExpiredRows() const { return expired_.load(std::memory_order_relaxed); }
  // Rows in the cold tier (evicted, kept on disk); 0 without one.
  uint64_t ColdRows() const { return cold_rows_.load(std::memory_order_relaxed); }
  absl::StatusOr<PartitionRows> ExportPartition(uint32_t partition) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ImportPartition(uint32_t partition, const PartitionRows& rows) override
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NumValueBytes() const override ABSL_LOCKS_EXCLUDED(mu_);
  KeyCount CountKeys(const std::vector<bool>& in) const override ABSL_LOCKS_EXCLUDED(mu_);
  void AddPartition(uint32_t partition) override;

 private:
  // With a capacity: room in the row arrays for capacity_rows and a quarter
  // more (the rows of pushes before an eviction pass), up to 1 GiB.
  void ReserveForCapacity() ABSL_LOCKS_EXCLUDED(mu_);
  // Slot of `key`, created from the initializer when absent.
  uint32_t FindOrCreate(Key key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One optimizer step on row `key` (created when absent) with `width_`
  // floats of gradient. With admission, an id without a row gets one only
  // at its min_count-th push; before that the push is counted and dropped.
  void ApplyRowLocked(Key key, const UnalignedFloat* grad) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One optimizer step on the row in `slot` (its gradient at any byte
  // address); counts the update and, with a capacity, its recency.
  void UpdateSlotLocked(uint32_t slot, const UnalignedFloat* grad)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records an update of the row in `slot` (its steps_ count aside): its
  // recency with a capacity, its clock with a ttl.
  void CountUpdateLocked(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks the CPU to load the row in `slot` into cache: its values, and for
  // an `update` its optimizer slots and update count too. A row is a few
  // cache lines at a random place, so a loop over rows prefetches a few
  // rows ahead of the one it works on.
  void PrefetchRowLocked(uint32_t slot, bool update) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Slots of keys[0, n) into push_slots_, rows created for new keys in key
  // order, with the hash groups of keys a few ahead prefetched. Tables
  // without a cold tier or admission only (a row's first push decides).
  template <typename KeyAt>
  void FindOrCreateAllLocked(size_t n, KeyAt key_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // UpdateSlotLocked(push_slots_[i], grad_at(i)) for i in [0, n), in that
  // order, with rows a few ahead prefetched, kUpdateBatch rows per call of
  // Optimizer::ApplyRows: grad_at's pointers must stay valid through the
  // next kUpdateBatch - 1 calls (PieceRows with that many held rows).
  template <typename GradAt>
  void UpdateAllLocked(size_t n, GradAt grad_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One optimizer step on each of n rows with distinct keys key_at(i) and
  // gradients grad_at(i), in that order: row by row (ApplyRowLocked) when a
  // row's first push decides whether it exists (admission, a cold tier),
  // else every row found or created first, then updated, prefetched.
  template <typename KeyAt, typename GradAt>
  void ApplyDistinctLocked(size_t n, KeyAt key_at, GradAt grad_at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ApplyIfDistinct and Gather with row i's gradient at grad_at(i), asked
  // for in increasing i.
  template <typename GradAt>
  bool ApplyIfDistinctRows(const std::string& keys, size_t n, GradAt grad_at)
      ABSL_LOCKS_EXCLUDED(mu_);
  template <typename GradAt>
  void GatherRows(const std::string& keys, size_t n, GradAt grad_at, GradBuffer* buffer) const;
  // Whether a row's first push decides whether it is created (admission or
  // a cold tier): then rows are looked up one by one.
  bool FirstPushDecides() const { return cold_ != nullptr || min_count_ > 1; }
  // After a push: evicts the least recently updated rows when the table
  // holds more than its capacity, moving the last rows into their places,
  // and gives memory back when the arrays are far larger than needed.
  void EvictIfOverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the rows in `slots` (descending), moving the last rows into
  // their places, and gives memory back when the arrays are far larger
  // than needed.
  void RemoveSlotsLocked(const std::vector<uint32_t>& slots) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends the bookkeeping of a new last slot holding `key`.
  void TrackNewSlotLocked(Key key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a new id starts waiting: with a capacity, drops the waiting ids
  // with the fewest pushes when more than the capacity wait.
  void DropPendingIfOverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With a cold tier: moves the row of `key` from it into memory (a new
  // slot, with its values, slots and update count). False when the tier
  // has no such row (or cannot read it: logged, the row starts over).
  bool TakeFromColdLocked(Key key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const uint32_t width_;
  const int slots_per_element_;
  const uint32_t min_count_;  // 1: every id gets a row at its first push
  const RowEviction eviction_;
  const int64_t ttl_clocks_;  // 0: rows never expire
  // Slots carry their keys (slot_keys_), for eviction or expiry.
  const bool tracks_slots_;
  std::vector<std::atomic<bool>> owned_;  // set once per partition; read without a lock
  std::atomic<bool> owns_all_{false};     // every partition of owned_ is set
  ColdRowStore* const cold_;              // null: evicted rows are dropped

  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, uint32_t> index_ ABSL_GUARDED_BY(mu_);  // key -> row slot
  std::vector<float> values_ ABSL_GUARDED_BY(mu_);   // slot * width
  std::vector<float> slots_ ABSL_GUARDED_BY(mu_);    // slot * S * width
  std::vector<int64_t> steps_ ABSL_GUARDED_BY(mu_);  // per slot
  // With a capacity or a time-to-live: each slot's key, and the tick of its
  // last update.
  std::vector<Key> slot_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> last_update_ ABSL_GUARDED_BY(mu_);
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  // With a time-to-live: the closed clock at each slot's last update
  // (kNoClock before the first AdvanceClock), the closed clock now, and
  // the clock of the next scan.
  static constexpr int64_t kNoClock = INT64_MIN;
  std::vector<int64_t> last_clock_ ABSL_GUARDED_BY(mu_);
  int64_t clock_ ABSL_GUARDED_BY(mu_) = kNoClock;
  int64_t next_scan_ ABSL_GUARDED_BY(mu_) = kNoClock;
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> spilled_{0};
  // ApplyIfDistinct: the stamp of the push that last touched each slot
  // (grown on demand; a slot past its end was not touched), this push's
  // stamp, and its keys' slots.
  std::vector<uint32_t> touched_ ABSL_GUARDED_BY(mu_);
  uint32_t stamp_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> push_slots_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> evicted_{0};
  // Admission: pushes counted per id without a row (min_count_ > 1).
  absl::flat_hash_map<Key, uint32_t> pending_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> not_admitted_{0};
  std::atomic<uint64_t> dropped_pending_{0};
  std::atomic<uint64_t> cold_rows_{0};
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_SPARSE_TABLE_H_
