// Stochastic gradient descent with optional heavy-ball or Nesterov momentum.
//
// Update of one element, gradient g, weight w, learning rate lr, weight decay
// wd, momentum mu (the formulation of PyTorch's torch.optim.SGD with
// dampening 0; Sutskever, Martens, Dahl, Hinton, "On the importance of
// initialization and momentum in deep learning", ICML 2013, for Nesterov):
//
//   g' = g + wd * w                   (L2 penalty added to the gradient)
//   mu == 0:    w = w - lr * g'
//   mu > 0:     v = mu * v + g'       (v starts at 0)
//     plain:    w = w - lr * v
//     Nesterov: w = w - lr * (g' + mu * v)
//
// Slots: none when mu == 0; else one, the velocity v.
#ifndef CAIRN_SERVER_OPTIMIZER_SGD_H_
#define CAIRN_SERVER_OPTIMIZER_SGD_H_

#include <cstddef>
#include <cstdint>

#include "server/optimizer/optimizer.h"

namespace cairn {

// Hyper-parameters, used as given. MakeOptimizer checks them; a directly built
// SgdOptimizer with values outside these ranges computes garbage.
struct SgdOptions {
  float learning_rate = 0.0f;  // > 0, finite
  float momentum = 0.0f;       // in [0, 1); 0 means plain SGD and no slot
  bool nesterov = false;       // needs momentum > 0
  float weight_decay = 0.0f;   // >= 0, finite; 0 means none
};

// Immutable after construction; safe to share across threads.
class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(const SgdOptions& options) : options_(options) {}

  // 0 without momentum, 1 (the velocity) with it.
  int SlotsPerElement() const override;
  // Velocity starts at 0.
  void InitSlots(float* slots, size_t n) const override;
  // `step` is unused.
  void ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n, int64_t step,
                   float grad_scale) const override;
  // `steps` is unused.
  void ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                 const int64_t* steps, size_t rows, size_t n) const override;

 private:
  const SgdOptions options_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_OPTIMIZER_SGD_H_
