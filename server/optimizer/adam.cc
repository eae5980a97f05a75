#include "server/optimizer/adam.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "server/optimizer/internal/update_loop.h"

namespace cairn {
namespace {

// Constants of one Apply, computed once in double and rounded to float.
struct AdamStepConstants {
  float one_minus_b1;  // 1 - b1
  float one_minus_b2;  // 1 - b2
  float step_size;     // lr / (1 - b1^t)
  float inv_bc2;       // 1 / (1 - b2^t)
};

AdamStepConstants ComputeConstants(const AdamOptions& o, int64_t step) {
  const double t = static_cast<double>(std::max<int64_t>(step, 1));
  const double b1 = o.beta1;
  const double b2 = o.beta2;
  // b < 1 and t >= 1, so 1 - b^t >= 1 - b > 0: no division by zero.
  return AdamStepConstants{
      .one_minus_b1 = static_cast<float>(1.0 - b1),
      .one_minus_b2 = static_cast<float>(1.0 - b2),
      .step_size = static_cast<float>(o.learning_rate / (1.0 - std::pow(b1, t))),
      .inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(b2, t))),
  };
}

// The constants of the last step this thread computed. Consecutive Apply
// calls (the rows of one push) usually share a step, and two pow() calls cost
// about as much as updating a 64-float row. The constants are a pure function
// of the key, so a hit returns exactly what ComputeConstants would.
struct ConstantsMemo {
  bool valid;
  float learning_rate;
  float beta1;
  float beta2;
  int64_t step;
  AdamStepConstants constants;
};
thread_local ConstantsMemo memo{};  // trivially constructed: no TLS guard

const AdamStepConstants& Constants(const AdamOptions& o, int64_t step) {
  if (!(memo.valid && memo.step == step && memo.learning_rate == o.learning_rate &&
        memo.beta1 == o.beta1 && memo.beta2 == o.beta2)) {
    memo = ConstantsMemo{.valid = true,
                         .learning_rate = o.learning_rate,
                         .beta1 = o.beta1,
                         .beta2 = o.beta2,
                         .step = step,
                         .constants = ComputeConstants(o, step)};
  }
  return memo.constants;
}

// Branch-free and vectorizable; every element goes through the same float
// operations in the same order, so chunking a block does not change its bits.
CAIRN_ELEMENT_LOOP
void AdamLoop(float* __restrict w, float* __restrict m, float* __restrict v,
              const UnalignedFloat* __restrict g, size_t n, float b1, float b2, float eps,
              float wd, float scale, const AdamStepConstants& c) {
  const float one_minus_b1 = c.one_minus_b1;
  const float one_minus_b2 = c.one_minus_b2;
  const float step_size = c.step_size;
  const float inv_bc2 = c.inv_bc2;
  for (size_t i = 0; i < n; ++i) {
    const float gs = g[i] * scale;
    const float gi = gs + wd * w[i];
    const float mi = b1 * m[i] + one_minus_b1 * gi;
    const float vi = b2 * v[i] + one_minus_b2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi * inv_bc2) + eps;
    const float update = (step_size * mi) / denom;
    w[i] = w[i] - (denom == 0.0f ? 0.0f : update);
  }
}

// Over `rows` blocks of n elements sharing one step (each block's slots: m,
// then v).
CAIRN_UPDATE_LOOP
void AdamStep(float* const* w, float* const* slots, const UnalignedFloat* const* g, size_t rows,
              size_t n, float b1, float b2, float eps, float wd, float scale,
              const AdamStepConstants& c) {
  for (size_t r = 0; r < rows; ++r) {
    AdamLoop(w[r], slots[r], slots[r] + n, g[r], n, b1, b2, eps, wd, scale, c);
  }
}

}  // namespace

void AdamOptimizer::InitSlots(float* slots, size_t n) const {
  std::fill_n(slots, 2 * n, 0.0f);
}

void AdamOptimizer::ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n,
                                int64_t step, float grad_scale) const {
  assert(step >= 1);
  const AdamStepConstants c = Constants(options_, step);
  AdamStep(&w, &slots, &g, 1, n, options_.beta1, options_.beta2, options_.epsilon,
           options_.weight_decay, grad_scale, c);
}

void AdamOptimizer::ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                              const int64_t* steps, size_t rows, size_t n) const {
  for (size_t r = 0; r < rows;) {
    size_t end = r + 1;
    while (end < rows && steps[end] == steps[r]) ++end;
    assert(steps[r] >= 1);
    const AdamStepConstants c = Constants(options_, steps[r]);
    AdamStep(w + r, slots + r, g + r, end - r, n, options_.beta1, options_.beta2,
             options_.epsilon, options_.weight_decay, 1.0f, c);
    r = end;
  }
}

}  // namespace cairn
