// Where the training loop's parameters live between steps: in this process
// (LocalParameterStore, `cairn-worker --local`) or on Cairn's servers
// (PsParameterStore). The loop is the same for both:
//   Pull() -> forward/backward -> PushAndClock(grads).
//
// Parameters and gradients use the Mlp's flat layout (mlp.h).
#ifndef CAIRN_WORKER_TRAINER_PARAMETER_STORE_H_
#define CAIRN_WORKER_TRAINER_PARAMETER_STORE_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/status_macros.h"

namespace cairn {

// Not thread-safe; one training loop drives it.
class ParameterStore {
 public:
  virtual ~ParameterStore() = default;

  // The parameters to use for the current iteration. The view stays valid
  // and unchanged until the next call on this store.
  virtual absl::StatusOr<absl::Span<const float>> Pull() = 0;

  // The current iteration's gradients of the mean loss (flat layout); ends
  // the iteration (one call, so that a store on servers can carry the clock
  // tick on the push: Client::PushAndClock).
  virtual absl::Status PushAndClock(absl::Span<const float> grads) = 0;
  // PushAndClock, running `meanwhile` once on the calling thread while the
  // push is in flight, where the store waits on one (a store on servers);
  // a store that waits on nothing does not run it (this default), so the
  // caller notes whether it ran. `meanwhile` must touch neither `grads` nor
  // the view Pull() returned: the push reads the one, its pull ahead writes
  // the other.
  virtual absl::Status PushAndClock(absl::Span<const float> grads,
                                    absl::FunctionRef<void()> /*meanwhile*/) {
    return PushAndClock(grads);
  }

  // Writes the rest of a gradient, calling `written(bytes)` each time the
  // last `bytes` of it (back from the end of the flat layout) are in place;
  // an error leaves it not all written (a push streaming it then stalls and
  // is refused whole).
  using GradientWriter =
      absl::FunctionRef<absl::Status(absl::FunctionRef<void(uint64_t bytes)> written)>;
  // PushAndClock(grads, meanwhile) of a gradient not all written yet: `write`
  // writes the rest into `grads`, once, on the calling thread, before the
  // push reads it, or while it does where the store can push a gradient
  // as it is written (a store on servers, Client::GradientStream); then
  // `meanwhile` runs as for PushAndClock. This default writes it first.
  virtual absl::Status PushAndClock(absl::Span<const float> grads,
                                    absl::FunctionRef<void()> meanwhile, GradientWriter write) {
    RETURN_IF_ERROR(write([](uint64_t) {}));
    return PushAndClock(grads, meanwhile);
  }

  // Where the caller may compute the next gradient it passes to
  // PushAndClock, when the store has memory the push reads in place (the
  // worker's shared region with its server); empty when it has none. It may
  // change between iterations: ask each time.
  virtual absl::Span<float> GradientBuffer() { return {}; }

  // The global step training starts at: 0, or the clock of the checkpoint a
  // resumed job restarts from (the step's batch is then the one a run from
  // step 0 would have drawn there).
  virtual int64_t StartStep() const { return 0; }
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PARAMETER_STORE_H_
