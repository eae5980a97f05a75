// Adagrad: per-element learning rates from the sum of squared gradients.
//
// Duchi, Hazan, Singer, "Adaptive Subgradient Methods for Online Learning and
// Stochastic Optimization", JMLR 12 (2011), diagonal variant. Update of one
// element, gradient g, weight w, accumulator acc:
//
//   g'  = g + wd * w                  (L2 penalty added to the gradient)
//   acc = acc + g' * g'               (acc starts at initial_accumulator)
//   w   = w - (lr * g') / (sqrt(acc) + eps)
//
// When sqrt(acc) + eps is exactly 0 (eps 0 and a zero accumulator, so g' is 0
// or so small that g'^2 underflows) the element is left unchanged: 0/0 counts
// as a zero update, never NaN. A NaN or infinite g' still propagates into acc
// and w.
//
// Slots: one, the accumulator acc.
#ifndef CAIRN_SERVER_OPTIMIZER_ADAGRAD_H_
#define CAIRN_SERVER_OPTIMIZER_ADAGRAD_H_

#include <cstddef>
#include <cstdint>

#include "server/optimizer/optimizer.h"

namespace cairn {

// Hyper-parameters, used as given. MakeOptimizer checks them; a directly built
// AdagradOptimizer with values outside these ranges computes garbage.
struct AdagradOptions {
  float learning_rate = 0.0f;        // > 0, finite
  float epsilon = 0.0f;              // >= 0, finite; 0 is allowed (see above)
  float initial_accumulator = 0.0f;  // >= 0, finite; acc's starting value
  float weight_decay = 0.0f;         // >= 0, finite; 0 means none
};

// Immutable after construction; safe to share across threads.
class AdagradOptimizer final : public Optimizer {
 public:
  explicit AdagradOptimizer(const AdagradOptions& options) : options_(options) {}

  // 1: the accumulator.
  int SlotsPerElement() const override { return 1; }
  // Accumulator starts at initial_accumulator.
  void InitSlots(float* slots, size_t n) const override;
  // `step` is unused.
  void ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n, int64_t step,
                   float grad_scale) const override;
  // `steps` is unused.
  void ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                 const int64_t* steps, size_t rows, size_t n) const override;

 private:
  const AdagradOptions options_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_OPTIMIZER_ADAGRAD_H_
