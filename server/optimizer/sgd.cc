#include "server/optimizer/sgd.h"

#include <algorithm>

#include "server/optimizer/internal/update_loop.h"

namespace cairn {
namespace {

// The loops below take plain __restrict pointers and carry no branches so the
// compiler vectorizes them; each element's arithmetic is the same whether it
// runs in a vector lane or in the scalar tail, so results do not depend on how
// a block is cut into calls. The update runs them over `rows` blocks of n
// elements (one for ApplyScaled, a push's embedding rows for ApplyRows).

CAIRN_ELEMENT_LOOP
void PlainLoop(float* __restrict w, const UnalignedFloat* __restrict g, size_t n, float lr,
               float wd, float scale) {
  for (size_t i = 0; i < n; ++i) {
    const float gs = g[i] * scale;
    const float gi = gs + wd * w[i];
    w[i] = w[i] - lr * gi;
  }
}

CAIRN_ELEMENT_LOOP
void MomentumLoop(float* __restrict w, float* __restrict v, const UnalignedFloat* __restrict g,
                  size_t n, float lr, float wd, float mu, float scale) {
  for (size_t i = 0; i < n; ++i) {
    const float gs = g[i] * scale;
    const float gi = gs + wd * w[i];
    const float vi = mu * v[i] + gi;
    v[i] = vi;
    w[i] = w[i] - lr * vi;
  }
}

CAIRN_ELEMENT_LOOP
void NesterovLoop(float* __restrict w, float* __restrict v, const UnalignedFloat* __restrict g,
                  size_t n, float lr, float wd, float mu, float scale) {
  for (size_t i = 0; i < n; ++i) {
    const float gs = g[i] * scale;
    const float gi = gs + wd * w[i];
    const float vi = mu * v[i] + gi;
    v[i] = vi;
    w[i] = w[i] - lr * (gi + mu * vi);
  }
}

CAIRN_UPDATE_LOOP
void SgdRows(float* const* w, float* const* v, const UnalignedFloat* const* g, size_t rows,
             size_t n, float lr, float wd, float mu, bool nesterov, float scale) {
  for (size_t r = 0; r < rows; ++r) {
    if (mu == 0.0f) {
      PlainLoop(w[r], g[r], n, lr, wd, scale);
    } else if (nesterov) {
      NesterovLoop(w[r], v[r], g[r], n, lr, wd, mu, scale);
    } else {
      MomentumLoop(w[r], v[r], g[r], n, lr, wd, mu, scale);
    }
  }
}

}  // namespace

int SgdOptimizer::SlotsPerElement() const {
  return options_.momentum > 0.0f ? 1 : 0;
}

void SgdOptimizer::InitSlots(float* slots, size_t n) const {
  std::fill_n(slots, static_cast<size_t>(SlotsPerElement()) * n, 0.0f);
}

void SgdOptimizer::ApplyScaled(float* w, float* slots, const UnalignedFloat* g, size_t n,
                               int64_t /*step*/, float grad_scale) const {
  SgdRows(&w, &slots, &g, 1, n, options_.learning_rate, options_.weight_decay,
          options_.momentum, options_.nesterov, grad_scale);
}

void SgdOptimizer::ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                             const int64_t* /*steps*/, size_t rows, size_t n) const {
  SgdRows(w, slots, g, rows, n, options_.learning_rate, options_.weight_decay,
          options_.momentum, options_.nesterov, 1.0f);
}

}  // namespace cairn
