// A dense table's owned chunk ranges (see table.h).
#ifndef CAIRN_SERVER_SHARD_DENSE_TABLE_H_
#define CAIRN_SERVER_SHARD_DENSE_TABLE_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/partitioning.h"
#include "server/shard/push_stream.h"
#include "server/shard/table.h"

namespace cairn {

// Thread-safe. An update or read of ForkJoin::kMinSplitBytes or more runs
// in pieces of its chunks on `helper` (when not null) and on the caller:
// each chunk is updated on its own (its values, slots and step), so the bits
// are those of the update on one thread.
class DenseTable final : public Table {
 public:
  DenseTable(const v1::TableSpec& spec, uint32_t num_partitions,
             const std::vector<bool>& owned, std::unique_ptr<Optimizer> optimizer,
             ForkJoin* helper = nullptr);

  absl::StatusOr<uint64_t> CheckKeys(const std::string& keys, size_t n) const override;
  uint64_t ValueFloats(const std::string& keys, size_t n) const override;
  uint32_t RowLength(Key key) const override { return ChunkLength(key); }
  void Read(const std::string& keys, size_t n, std::string* out) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReadTo(const std::string& keys, size_t n, float* out) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Gather(const std::string& keys, size_t n, absl::string_view values,
              GradBuffer* buffer) const override;
  void ApplyUnique(const std::string& keys, size_t n, absl::string_view values) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void ApplyUniqueAndRead(const std::string& keys, size_t n, absl::string_view values,
                          float* out) override ABSL_LOCKS_EXCLUDED(mu_);
  // What ApplyStreamedAndRead changed, so that a push refused midway can
  // be put back: each chunk's values, optimizer slots and step as they
  // were before it. Its memory is kept for the next push (a step's).
  // Thread-compatible.
  class Undo {
   public:
    // Puts every saved chunk back as it was, the last saved first, then
    // forgets them.
    void Restore();
    // Forgets every saved chunk (the push stands).
    void Clear();

   private:
    friend class DenseTable;
    struct Saved {
      DenseTable* table;
      Key chunk;
      size_t at;  // its floats in floats_: values, then slots
      int64_t step;
    };
    std::vector<Saved> saved_;
    std::vector<float> floats_;
  };
  // Bytes an Undo holds for `value_bytes` of this table's float32 values.
  uint64_t UndoBytes(uint64_t value_bytes) const {
    return value_bytes * (1 + static_cast<uint64_t>(slots_per_element_));
  }

  // ApplyUniqueAndRead of a streamed push (push_stream.h): each chunk, the
  // last first, once `stream` counts its gradient written (`values` lies in
  // the stream's run), checked finite first (unless the table allows
  // non-finite values), and saved into `undo` before it is updated.
  // Returns at the first error, with the chunks updated so far still in
  // `undo` for the caller to restore: DeadlineExceeded (PushStream::Await),
  // InvalidArgument naming the table, key and offset of a value that is
  // not finite (as CheckFinite). The bits are those of ApplyUniqueAndRead.
  absl::Status ApplyStreamedAndRead(const std::string& keys, size_t n, absl::string_view values,
                                    float* out, const PushStream& stream, Undo* undo)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Apply(const GradBuffer& grads) override ABSL_LOCKS_EXCLUDED(mu_);
  void ApplyScaled(GradBuffer& grads, float grad_scale) override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NumKeys() const override;
  absl::StatusOr<PartitionRows> ExportPartition(uint32_t partition) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ImportPartition(uint32_t partition, const PartitionRows& rows) override
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t NumValueBytes() const override;
  KeyCount CountKeys(const std::vector<bool>& in) const override;
  void AddPartition(uint32_t partition) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One held partition's chunks, with a lock of its own: pushes to different
  // partitions apply at once, and a pull waits only for pushes to the
  // partitions it reads.
  struct Block {
    KeyRange chunks;             // constant once made
    uint64_t first_element = 0;  // constant once made
    uint64_t num_values = 0;     // constant once made
    mutable absl::Mutex mu;
    std::vector<float> values ABSL_GUARDED_BY(mu);
    std::vector<float> slots ABSL_GUARDED_BY(mu);    // S * values.size(), slot-major per chunk
    std::vector<int64_t> steps ABSL_GUARDED_BY(mu);  // updates applied, per chunk
  };
  // One optimizer step on chunk `chunk` of `b` with `length` floats of
  // gradient, each multiplied by `grad_scale` first (Optimizer::ApplyScaled).
  void ApplyChunkLocked(Block& b, Key chunk, const float* grad, uint32_t length,
                        float grad_scale = 1.0f) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // ApplyChunkLocked on every row of `grads`, with `grad_scale`.
  void ApplyRows(const GradBuffer& grads, float grad_scale) ABSL_LOCKS_EXCLUDED(mu_);
  // ApplyRows on rows [begin, end) of `grads`.
  void ApplyRowRange(const GradBuffer& grads, size_t begin, size_t end, float grad_scale)
      ABSL_LOCKS_EXCLUDED(mu_);
  // helper_ for an update of chunks `first` to `last` (ascending) when they
  // lie in more than one block; null otherwise.
  ForkJoin* SplitsOver(Key first, Key last) const;
  // ReadTo of keys [begin, end) of `keys`, written from `out` on.
  void ReadKeyRange(const std::string& keys, size_t begin, size_t end, float* out) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // ApplyUniqueAndRead on keys [begin, end) of `keys`, whose gradient
  // starts at `grad` and whose new values go to `out` (null: none).
  void ApplyKeyRange(const std::string& keys, size_t begin, size_t end, const float* grad,
                     float* out) ABSL_LOCKS_EXCLUDED(mu_);
  // Floats in chunk `chunk`.
  uint32_t ChunkLength(Key chunk) const;
  // The block holding `chunk`, -1 when not held.
  int32_t BlockOf(Key chunk) const { return chunk_block_[chunk].load(std::memory_order_acquire); }
  // A block of `range`'s chunks from the table's initializer.
  std::unique_ptr<Block> MakeBlock(const KeyRange& range) const;

  // Constant after construction.
  const uint64_t num_elements_;
  const uint64_t chunk_size_;
  const uint64_t num_chunks_;
  const int slots_per_element_;
  ForkJoin* const helper_;  // not owned; may be null
  // chunk -> index in blocks_, -1: not held. Set once per chunk (at
  // construction or by AddPartition, after its block exists); read without
  // the lock.
  std::vector<std::atomic<int32_t>> chunk_block_;

  // Taken shared to use blocks, exclusively to add one (AddPartition).
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_DENSE_TABLE_H_
