#include "server/optimizer/adagrad.h"

#include <algorithm>
#include <cmath>

#include "server/optimizer/internal/update_loop.h"

namespace cairn {
namespace {

// Branch-free and vectorizable: the 0/0 guard is a select, not a jump, and
// every element goes through the same operations in the same order, so a
// block gives the same bits however it is cut into calls.
CAIRN_ELEMENT_LOOP
void AdagradLoop(float* __restrict w, float* __restrict acc, const UnalignedFloat* __restrict g,
                 size_t n, float lr, float eps, float wd, float scale) {
  for (size_t i = 0; i < n; ++i) {
    const float gs = g[i] * scale;
    const float gi = gs + wd * w[i];
    const float a = acc[i] + gi * gi;
    acc[i] = a;
    const float denom = std::sqrt(a) + eps;
    const float update = (lr * gi) / denom;
    w[i] = w[i] - (denom == 0.0f ? 0.0f : update);
  }
}

// Over `rows` blocks of n elements (one for ApplyScaled, a push's rows for
// ApplyRows).
CAIRN_UPDATE_LOOP
void AdagradStep(float* const* w, float* const* acc, const UnalignedFloat* const* g, size_t rows,
                 size_t n, float lr, float eps, float wd, float scale) {
  for (size_t r = 0; r < rows; ++r) AdagradLoop(w[r], acc[r], g[r], n, lr, eps, wd, scale);
}

}  // namespace

void AdagradOptimizer::InitSlots(float* slots, size_t n) const {
  std::fill_n(slots, n, options_.initial_accumulator);
}

void AdagradOptimizer::ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n,
                                   int64_t /*step*/, float grad_scale) const {
  AdagradStep(&w, &slots, &g, 1, n, options_.learning_rate, options_.epsilon,
              options_.weight_decay, grad_scale);
}

void AdagradOptimizer::ApplyRows(float* const* w, float* const* slots,
                                 const UnalignedFloat* const* g, const int64_t* /*steps*/,
                                 size_t rows, size_t n) const {
  AdagradStep(w, slots, g, rows, n, options_.learning_rate, options_.epsilon,
              options_.weight_decay, 1.0f);
}

}  // namespace cairn
