// Adam: bias-corrected first and second moment estimates.
//
// Kingma, Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015,
// Algorithm 1. Update of one element at step t (1, 2, ...), gradient g,
// weight w, moments m and v:
//
//   g'   = g + wd * w                 (L2 penalty added to the gradient, as in
//                                      PyTorch's Adam; not AdamW's decoupled
//                                      decay)
//   m    = b1 * m + (1 - b1) * g'     (m, v start at 0)
//   v    = b2 * v + (1 - b2) * g'^2
//   mhat = m / (1 - b1^t)
//   vhat = v / (1 - b2^t)
//   w    = w - lr * mhat / (sqrt(vhat) + eps)
//
// Arithmetic: per Apply, in double, s = lr / (1 - b1^t) and c = 1 / (1 - b2^t),
// each rounded once to float; per element, in float,
//   w = w - (s * m) / (sqrt(v * c) + eps),
// which is Algorithm 1 with lr * mhat computed as s * m. eps keeps its place
// outside the square root (this is not the paper's "efficient version", which
// moves eps). When sqrt(v * c) + eps is exactly 0 (eps 0 and v 0) the element
// is left unchanged: 0/0 counts as a zero update, never NaN.
//
// Slots: two, slot 0 = m and slot 1 = v (slot-major: m of the whole block,
// then v of the whole block).
#ifndef CAIRN_SERVER_OPTIMIZER_ADAM_H_
#define CAIRN_SERVER_OPTIMIZER_ADAM_H_

#include <cstddef>
#include <cstdint>

#include "server/optimizer/optimizer.h"

namespace cairn {

// Hyper-parameters, used as given (a 0 is a 0, not "the usual default").
// MakeOptimizer checks them; a directly built AdamOptimizer with values
// outside these ranges computes garbage.
struct AdamOptions {
  float learning_rate = 0.0f;  // > 0, finite
  float beta1 = 0.0f;          // in [0, 1)
  float beta2 = 0.0f;          // in [0, 1)
  float epsilon = 0.0f;        // >= 0, finite
  float weight_decay = 0.0f;   // >= 0, finite; 0 means none
};

// Immutable after construction; safe to share across threads.
class AdamOptimizer final : public Optimizer {
 public:
  explicit AdamOptimizer(const AdamOptions& options) : options_(options) {}

  // 2: m then v.
  int SlotsPerElement() const override { return 2; }
  // m and v start at 0.
  void InitSlots(float* slots, size_t n) const override;
  // `step` is t in the bias correction, >= 1 (a smaller value is a caller bug;
  // it is asserted in debug builds and treated as 1 otherwise). The bias
  // corrections of the last step are cached per thread (a pure function of
  // lr, b1, b2 and step), so rows of one push sharing a step compute them once.
  void ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n, int64_t step,
                   float grad_scale) const override;
  // Each run of rows with one step shares its bias corrections.
  void ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                 const int64_t* steps, size_t rows, size_t n) const override;

 private:
  const AdamOptions options_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_OPTIMIZER_ADAM_H_
