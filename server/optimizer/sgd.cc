#include "server/optimizer/sgd.h"

#include <algorithm>

#include "server/optimizer/internal/update_loop.h"

namespace cairn {
namespace {

// The loops below take plain __restrict pointers and carry no branches so the
// compiler vectorizes them; each element's arithmetic is the same whether it
// runs in a vector lane or in the scalar tail, so results do not depend on how
// a block is cut into calls. Each runs over `rows` blocks of n elements (one
// for ApplyScaled, a push's embedding rows for ApplyRows).

CAIRN_UPDATE_LOOP
void PlainStep(float* const* w_rows, const UnalignedFloat* const* g_rows, size_t rows,
               size_t n, float lr, float wd, float scale) {
  for (size_t r = 0; r < rows; ++r) {
    float* __restrict w = w_rows[r];
    const UnalignedFloat* __restrict g = g_rows[r];
    for (size_t i = 0; i < n; ++i) {
      const float gs = g[i] * scale;
      const float gi = gs + wd * w[i];
      w[i] = w[i] - lr * gi;
    }
  }
}

CAIRN_UPDATE_LOOP
void MomentumStep(float* const* w_rows, float* const* v_rows,
                  const UnalignedFloat* const* g_rows, size_t rows, size_t n, float lr,
                  float wd, float mu, float scale) {
  for (size_t r = 0; r < rows; ++r) {
    float* __restrict w = w_rows[r];
    float* __restrict v = v_rows[r];
    const UnalignedFloat* __restrict g = g_rows[r];
    for (size_t i = 0; i < n; ++i) {
      const float gs = g[i] * scale;
      const float gi = gs + wd * w[i];
      const float vi = mu * v[i] + gi;
      v[i] = vi;
      w[i] = w[i] - lr * vi;
    }
  }
}

CAIRN_UPDATE_LOOP
void NesterovStep(float* const* w_rows, float* const* v_rows,
                  const UnalignedFloat* const* g_rows, size_t rows, size_t n, float lr,
                  float wd, float mu, float scale) {
  for (size_t r = 0; r < rows; ++r) {
    float* __restrict w = w_rows[r];
    float* __restrict v = v_rows[r];
    const UnalignedFloat* __restrict g = g_rows[r];
    for (size_t i = 0; i < n; ++i) {
      const float gs = g[i] * scale;
      const float gi = gs + wd * w[i];
      const float vi = mu * v[i] + gi;
      v[i] = vi;
      w[i] = w[i] - lr * (gi + mu * vi);
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
  Update(&w, &slots, &g, 1, n, grad_scale);
}

void SgdOptimizer::ApplyRows(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                             const int64_t* /*steps*/, size_t rows, size_t n) const {
  Update(w, slots, g, rows, n, 1.0f);
}

void SgdOptimizer::Update(float* const* w, float* const* slots, const UnalignedFloat* const* g,
                          size_t rows, size_t n, float grad_scale) const {
  const float lr = options_.learning_rate;
  const float wd = options_.weight_decay;
  const float mu = options_.momentum;
  if (mu == 0.0f) {
    PlainStep(w, g, rows, n, lr, wd, grad_scale);
  } else if (options_.nesterov) {
    NesterovStep(w, slots, g, rows, n, lr, wd, mu, grad_scale);
  } else {
    MomentumStep(w, slots, g, rows, n, lr, wd, mu, grad_scale);
  }
}

}  // namespace cairn
