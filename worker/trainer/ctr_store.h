// Where the ctr model's parameters live between steps (ctr_model.h): the
// head's dense tables and one sparse table of embedding rows per field.
// LocalCtrStore keeps them in this process (`cairn-worker --local`),
// PsCtrStore (ps_ctr_store.h) on Cairn's servers. A step is
//   Pull(keys) -> TrainStep -> PushAndClock(head grads, row grads),
// or, when the next batch's keys are known before the push,
//   TrainStep -> PushClockAndPull(grads, next keys) -> TrainStep -> ...
#ifndef CAIRN_WORKER_TRAINER_CTR_STORE_H_
#define CAIRN_WORKER_TRAINER_CTR_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "server/optimizer/optimizer.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/local_trainer.h"

namespace cairn {

// Not thread-safe; one training loop drives it.
class CtrParameterStore {
 public:
  virtual ~CtrParameterStore() = default;

  // The head's parameters (Mlp flat layout) and, into rows[f], the rows of
  // keys[f] (keys[f].size() x width floats) for each of the 26 fields. Rows
  // never pushed (or not admitted yet) hold the initializer's values. The
  // head's view stays valid until the next call.
  virtual absl::StatusOr<absl::Span<const float>> Pull(const std::vector<std::vector<Key>>& keys,
                                                       FieldRows* rows) = 0;
  // The head's gradients and, per field, the rows' (keys distinct); ends
  // the iteration.
  virtual absl::Status PushAndClock(absl::Span<const float> head_grads,
                                    const std::vector<std::vector<Key>>& keys,
                                    const FieldRows& row_grads) = 0;
  // PushAndClock, then the next iteration's Pull of `next_keys` into
  // `next_rows` where the store can read ahead with the push (one round
  // trip on Cairn's servers). Returns the head's view as Pull would, or
  // nullopt when nothing was read ahead (this store does not, or the read
  // ahead failed): then the caller Pulls as usual. Errors: PushAndClock's;
  // the iteration ends as it says. The default reads nothing ahead.
  virtual absl::StatusOr<std::optional<absl::Span<const float>>> PushClockAndPull(
      absl::Span<const float> head_grads, const std::vector<std::vector<Key>>& keys,
      const FieldRows& row_grads, const std::vector<std::vector<Key>>& next_keys,
      FieldRows* next_rows);
  // As ParameterStore::StartStep.
  virtual int64_t StartStep() const { return 0; }
  // Whether PushClockAndPull waits on other processes (Cairn's servers):
  // the trainer then gathers the batch after next on a thread of its own
  // meanwhile (ctr_batch_ahead.h). A store in this process keeps its
  // caller's thread busy instead: false.
  virtual bool WaitsOnServers() const { return false; }
};

// One sparse table in this process, as a server's SparseTable applies it:
// a row starts from InitSparseRow at its first (admitted) push, each push
// of a row is one optimizer update with step = the row's own update count
// (lazy: rows not pushed are not touched), and with min_count > 1 an id's
// first min_count - 1 pushes are only counted. No eviction.
class LocalSparseRows {
 public:
  // InvalidArgument naming the table when its optimizer spec is bad.
  static absl::StatusOr<LocalSparseRows> Create(const v1::TableSpec& spec);

  // rows of `keys` into `out` (keys.size() x width).
  void Read(absl::Span<const Key> keys, absl::Span<float> out) const;
  // One update per key (keys distinct) with grads (keys.size() x width).
  void Apply(absl::Span<const Key> keys, absl::Span<const float> grads);
  size_t rows() const { return index_.size(); }
  size_t width() const { return width_; }

 private:
  explicit LocalSparseRows(const v1::TableSpec& spec, std::unique_ptr<Optimizer> optimizer);

  v1::TableSpec spec_;
  size_t width_;
  std::unique_ptr<Optimizer> optimizer_;
  absl::flat_hash_map<Key, uint32_t> index_;    // key -> row slot
  absl::flat_hash_map<Key, uint32_t> pending_;  // not admitted yet: pushes seen
  std::vector<float> values_;                   // slot-major, width per row
  std::vector<float> slots_;                    // optimizer slots, S * width per row
  std::vector<int64_t> steps_;                  // updates per row
};

// Not thread-safe.
class LocalCtrStore final : public CtrParameterStore {
 public:
  // head: the head's tables bound to its flat layout; fields: the 26 sparse
  // tables in field order. InvalidArgument naming a table that is bad.
  static absl::StatusOr<std::unique_ptr<LocalCtrStore>> Create(
      std::vector<BoundTable> head, size_t head_params, const std::vector<v1::TableSpec>& fields);

  absl::StatusOr<absl::Span<const float>> Pull(const std::vector<std::vector<Key>>& keys,
                                               FieldRows* rows) override;
  absl::Status PushAndClock(absl::Span<const float> head_grads,
                            const std::vector<std::vector<Key>>& keys,
                            const FieldRows& row_grads) override;

 private:
  LocalCtrStore() = default;

  std::unique_ptr<LocalParameterStore> head_;
  std::vector<LocalSparseRows> fields_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_CTR_STORE_H_
