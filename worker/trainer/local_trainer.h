// Training in one process with no parameter server: the reference a job
// through Cairn is checked against.
//
// LocalParameterStore starts from the values the servers would create
// (InitDenseElements over each whole table) and applies each pushed
// gradient with the table's server-side optimizer (MakeOptimizer), the whole
// tensor as one block with step = its update count, as a server applies a
// BSP iteration's mean. So one worker through Cairn and --local see the same
// parameters at every step.
#ifndef CAIRN_WORKER_TRAINER_LOCAL_TRAINER_H_
#define CAIRN_WORKER_TRAINER_LOCAL_TRAINER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/optimizer/optimizer.h"
#include "worker/trainer/model_tables_binding.h"
#include "worker/trainer/parameter_store.h"

namespace cairn {

// Not thread-safe; one training loop drives it.
class LocalParameterStore final : public ParameterStore {
 public:
  // num_params: the model's flat size (every table inside it). InvalidArgument
  // naming the table when its optimizer spec is bad or it does not fit.
  static absl::StatusOr<std::unique_ptr<LocalParameterStore>> Create(std::vector<BoundTable> tables,
                                                                     size_t num_params);

  // The parameters themselves (no copy).
  absl::StatusOr<absl::Span<const float>> Pull() override;
  // Applies each table's optimizer to its slice (nothing else ends an
  // iteration here). InvalidArgument on a wrong size.
  absl::Status PushAndClock(absl::Span<const float> grads) override;
  using ParameterStore::PushAndClock;  // with `meanwhile`: not run here

  // Updates applied so far.
  int64_t updates() const { return updates_; }
  absl::Span<const float> params() const { return params_; }

 private:
  struct TableState {
    BoundTable table;
    std::unique_ptr<Optimizer> optimizer;
    std::vector<float> slots;  // SlotsPerElement() * size, slot-major
  };
  LocalParameterStore() = default;

  std::vector<TableState> tables_;
  std::vector<float> params_;
  int64_t updates_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_LOCAL_TRAINER_H_
