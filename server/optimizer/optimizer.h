// Server-side optimizers: one update rule applied in place to a block of
// parameters (a dense chunk or a sparse embedding row) and its slots.
//
// Slots are float32 state kept beside the parameters, slot-major within a
// block: for a block of n elements, slots[s * n + i] is slot s of element i.
// The same code runs on the servers and in `cairn-worker --local`, so the two
// produce bit-identical parameters for the same gradients.
#ifndef CAIRN_SERVER_OPTIMIZER_OPTIMIZER_H_
#define CAIRN_SERVER_OPTIMIZER_OPTIMIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "common/unaligned_float.h"

namespace cairn {
namespace v1 {
class OptimizerSpec;
}

// Immutable after construction; safe to share across threads (Apply keeps no
// state of its own: all state lives in the caller's `slots`).
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Float32 slots per parameter element (SGD 0, momentum 1, Adagrad 1, Adam 2).
  virtual int SlotsPerElement() const = 0;

  // Writes the initial slot values of an n-element block (S * n floats).
  virtual void InitSlots(float* slots, size_t n) const = 0;

  // One update of n elements: w (n floats), slots (S * n floats), g (n floats,
  // the gradient, at any byte address: a push's rows are read where the
  // transport received them). `step` is the block's update count including this one (>= 1;
  // Adam's bias correction uses it).
  void Apply(float* w, float* slots, const UnalignedFloat* g, size_t n, int64_t step) const {
    ApplyScaled(w, slots, g, n, step, 1.0f);
  }
  // The same update with the gradient g[i] * grad_scale, each product
  // rounded to float before the update uses it: the bits of Apply on a
  // gradient scaled first (a BSP mean's 1 / workers), without a pass of
  // its own over the gradient. grad_scale 1 gives Apply's bits exactly.
  virtual void ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n,
                           int64_t step, float grad_scale) const = 0;
  // Apply on each of `rows` blocks of n elements, in turn: block r's
  // parameters at w[r], its slots at slots[r] (S * n floats, as Apply's),
  // its gradient at g[r] (any byte address) and its update count including
  // this one in steps[r]. The bits of `rows` Apply calls, in one call: a
  // push's embedding rows are updated together, where a call per row costs
  // a virtual call and a dispatch to the CPU's build of the loop
  // (internal/update_loop.h) each. Blocks must not overlap.
  virtual void ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                         const int64_t* steps, size_t rows, size_t n) const = 0;
};

// Builds the optimizer `spec` names (update rules, slots and sources: sgd.h,
// adagrad.h, adam.h).
//
// Fields are taken literally: a field left at 0 in the proto means 0, not a
// library default (Adam with beta1 0 keeps no first-moment history; epsilon 0
// is no epsilon). The job config loader writes the usual defaults (for Adam
// 0.9 / 0.999 / 1e-8) into the spec explicitly. Each kind reads only its own
// fields and ignores the others:
//   sgd:     learning_rate, momentum, nesterov, weight_decay
//   adagrad: learning_rate, epsilon, initial_accumulator, weight_decay
//   adam:    learning_rate, beta1, beta2, epsilon, weight_decay
// Valid values: learning_rate > 0 and finite; momentum, beta1, beta2 in
// [0, 1); epsilon, initial_accumulator, weight_decay >= 0 and finite;
// nesterov only with momentum > 0.
//
// Errors: InvalidArgument when kind is unspecified or unknown, or a field the
// kind reads is out of range (NaN included); the message names the kind and
// the field, e.g. "adam optimizer: beta2 must be in [0, 1), got 1".
absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const v1::OptimizerSpec& spec);

}  // namespace cairn

#endif  // CAIRN_SERVER_OPTIMIZER_OPTIMIZER_H_
