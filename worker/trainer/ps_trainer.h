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

#include <atomic>
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
  //
  // `in_shared_memory`: keep the values, and the gradient the caller
  // computes (GradientBuffer), in buffers lent by the client
  // (Client::LendSharedBuffer: one server on this host), so that a step's
  // push and pull are read and written there in place; the store's own
  // memory, copied through the region, until the client can lend (it is
  // asked again each step for the first kLendTries steps) and after a call
  // that used lent memory failed (SharedBuffer::spoiled).
  static absl::StatusOr<std::unique_ptr<PsParameterStore>> Create(Client* client,
                                                                  std::vector<BoundTable> tables,
                                                                  size_t num_params,
                                                                  bool in_shared_memory = false);

  // Every table's values for the current iteration, in a host buffer owned
  // by the store: those the last PushAndClock pulled ahead, or a PullDense
  // now (the first step; after a pull ahead that failed), which waits as the
  // tables' consistency requires.
  absl::StatusOr<absl::Span<const float>> Pull() override;
  // Client::PushClockAndPull of every table's slice of `grads`, pulling the
  // next iteration's values into the store's buffer: returns once the
  // servers acknowledged the push and answered the pull. Returns the push's
  // error; a pull ahead that failed is logged and done again by Pull().
  // `meanwhile` runs while both are in flight (Client::PushClockAndPull).
  absl::Status PushAndClock(absl::Span<const float> grads) override {
    return PushAndClock(grads, [] {});
  }
  absl::Status PushAndClock(absl::Span<const float> grads,
                            absl::FunctionRef<void()> meanwhile) override;
  // The same, `grads` written by `write` as the push goes when they are the
  // lent gradient buffer (Client::GradientStream: the count of bytes
  // written lies in the lent block, after the gradient), else first.
  absl::Status PushAndClock(absl::Span<const float> grads, absl::FunctionRef<void()> meanwhile,
                            GradientWriter write) override;
  // The client's clock when the store was created (a resumed job's workers
  // start at the checkpoint's clock).
  int64_t StartStep() const override { return start_step_; }
  // The lent gradient buffer (num_params floats), or empty.
  absl::Span<float> GradientBuffer() override { return grads_; }
  // Whether the values are in lent memory now (for tests and logs).
  bool in_shared_memory() const { return lent_params_ != nullptr; }

  // How many steps the store asks the client to lend before it gives up.
  static constexpr int kLendTries = 1000;

  // For a caller that pulls and pushes these tables together with others in
  // one Client operation (ps_ctr_store.h): where a pull writes (views into
  // params()), and the buffers of a push of `grads` (the flat layout;
  // InvalidArgument on a wrong size).
  const std::vector<DenseBuffer>& pull_buffers() const { return pull_buffers_; }
  absl::Span<const float> params() const { return params_; }
  absl::StatusOr<std::vector<ConstDenseBuffer>> PushBuffers(absl::Span<const float> grads) const;

 private:
  PsParameterStore(Client* client, std::vector<BoundTable> tables, size_t num_params,
                   bool in_shared_memory);

  // Moves the values into lent buffers, when the client lends them now.
  void TryLend();
  // Back to the store's own memory after a call that used a lent buffer
  // failed; the values are pulled again. Whether it moved.
  bool DropSpoiled();
  // Points pull_buffers_ at params_.
  void ViewParams();

  Client* const client_;
  const int64_t start_step_;
  const std::vector<BoundTable> tables_;
  bool lend_;       // wants lent memory
  int lend_tries_ = 0;
  std::vector<float> own_params_;  // empty while the values are in lent memory
  std::unique_ptr<SharedBuffer> lent_params_;  // with lent_grads_, or neither
  std::unique_ptr<SharedBuffer> lent_grads_;
  absl::Span<float> params_;  // own_params_, or lent_params_'s memory
  absl::Span<float> grads_;   // lent_grads_'s memory, or empty
  // In lent_grads_'s block after grads_: a streamed push's count of bytes
  // written (Client::GradientStream); null with grads_ empty.
  std::atomic<uint64_t>* written_ = nullptr;
  std::vector<DenseBuffer> pull_buffers_;  // views into params_
  // params_ holds the current iteration's values (pulled ahead).
  bool pulled_ = false;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PS_TRAINER_H_
