// Training through Cairn: parameters live on the servers; each iteration
// computes, then pushes the gradients, ends the iteration and pulls the next
// iteration's values in one call, Client::PushClockAndPull
// (worker/client/client.h): one round trip per step.
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

  // Every table's values for the current iteration, in a host buffer owned
  // by the store: those the last PushAndClock pulled ahead, or a PullDense
  // now (the first step; after a pull ahead that failed), which waits as the
  // tables' consistency requires.
  absl::StatusOr<absl::Span<const float>> Pull() override;
  // Client::PushClockAndPull of every table's slice of `grads`, pulling the
  // next iteration's values into the store's buffer: returns once the
  // servers acknowledged the push and answered the pull. Returns the push's
  // error; a pull ahead that failed is logged and done again by Pull().
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
  // params_ holds the current iteration's values (pulled ahead).
  bool pulled_ = false;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PS_TRAINER_H_
