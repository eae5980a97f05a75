// Training through Cairn: parameters live on the servers; each iteration
// pulls every model table, computes, then pushes the gradients and ends the
// iteration in one call, Client::PushAndClock (worker/client/client.h).
//
// Under BSP the servers apply the mean of all W workers' gradients once per
// iteration, so W workers with batch b train as one worker with batch W * b
// over the same examples (sharding.h deals them out that way).
#ifndef CAIRN_WORKER_TRAINER_PS_TRAINER_H_
#define CAIRN_WORKER_TRAINER_PS_TRAINER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/client/client.h"
#include "worker/trainer/model_tables_binding.h"
#include "worker/trainer/parameter_store.h"

namespace cairn {

// Not thread-safe; one training loop drives it. The Client must outlive it.
class PsParameterStore final : public ParameterStore {
 public:
  // Checks that the job has every table with the same kind and shape as this
  // worker's model: FailedPrecondition naming the table otherwise (the
  // worker's config and the coordinator's differ).
  static absl::StatusOr<std::unique_ptr<PsParameterStore>> Create(Client* client,
                                                                  std::vector<BoundTable> tables,
                                                                  size_t num_params);

  // PullDense of every table into a host buffer owned by the store; waits as
  // the tables' consistency requires.
  absl::StatusOr<absl::Span<const float>> Pull() override;
  // Client::PushAndClock of every table's slice of `grads`: returns once
  // the servers acknowledged the push; the iteration's clock ticks ride on
  // it where they can.
  absl::Status PushAndClock(absl::Span<const float> grads) override;
  // The client's clock when the store was created (a resumed job's workers
  // start at the checkpoint's clock).
  int64_t StartStep() const override { return start_step_; }

  // For a caller that pulls and pushes these tables together with others in
  // one Client operation (ps_ctr_store.h): where a pull writes (views into
  // params()), and the buffers of a push of `grads` (the flat layout;
  // InvalidArgument on a wrong size).
  const std::vector<DenseBuffer>& pull_buffers() const { return pull_buffers_; }
  absl::Span<const float> params() const { return params_; }
  absl::StatusOr<std::vector<ConstDenseBuffer>> PushBuffers(absl::Span<const float> grads) const;

 private:
  PsParameterStore(Client* client, std::vector<BoundTable> tables, size_t num_params);

  Client* const client_;
  const int64_t start_step_;
  const std::vector<BoundTable> tables_;
  std::vector<float> params_;
  std::vector<DenseBuffer> pull_buffers_;  // views into params_
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PS_TRAINER_H_
