// Tests of the server-side optimizers against hand-computed updates.
//
// Where the inputs allow it (powers of two, exact squares) the expected values
// are exact in float32 and compared with ==; elsewhere the comments give the
// arithmetic in exact decimals and the comparison allows float32 rounding.
#include "server/optimizer/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/status/status.h"
#include "cairn/v1/types.pb.h"

namespace cairn {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

// A handful of float32 operations on values of magnitude <= 2 round to within
// a few ulps (ulp(2) = 2.4e-7); 2e-6 leaves room for that and nothing else.
constexpr double kTol = 2e-6;

v1::OptimizerSpec Sgd(float lr, float momentum = 0, bool nesterov = false,
                      float wd = 0) {
  v1::OptimizerSpec spec;
  spec.set_kind(v1::OPTIMIZER_KIND_SGD);
  spec.set_learning_rate(lr);
  spec.set_momentum(momentum);
  spec.set_nesterov(nesterov);
  spec.set_weight_decay(wd);
  return spec;
}

v1::OptimizerSpec Adagrad(float lr, float eps, float acc0, float wd = 0) {
  v1::OptimizerSpec spec;
  spec.set_kind(v1::OPTIMIZER_KIND_ADAGRAD);
  spec.set_learning_rate(lr);
  spec.set_epsilon(eps);
  spec.set_initial_accumulator(acc0);
  spec.set_weight_decay(wd);
  return spec;
}

v1::OptimizerSpec Adam(float lr, float b1, float b2, float eps, float wd = 0) {
  v1::OptimizerSpec spec;
  spec.set_kind(v1::OPTIMIZER_KIND_ADAM);
  spec.set_learning_rate(lr);
  spec.set_beta1(b1);
  spec.set_beta2(b2);
  spec.set_epsilon(eps);
  spec.set_weight_decay(wd);
  return spec;
}

std::unique_ptr<Optimizer> Make(const v1::OptimizerSpec& spec) {
  auto optimizer = MakeOptimizer(spec);
  REQUIRE(optimizer.ok());
  return *std::move(optimizer);
}

// One block of parameters with its slots, stepped by one optimizer.
struct Block {
  Block(const Optimizer& opt, std::vector<float> initial)
      : optimizer(opt), w(std::move(initial)) {
    slots.resize(optimizer.SlotsPerElement() * w.size());
    optimizer.InitSlots(slots.data(), w.size());
  }
  void Step(const std::vector<float>& g) {
    REQUIRE(g.size() == w.size());
    optimizer.Apply(w.data(), slots.data(), g.data(), w.size(), ++step);
  }
  const Optimizer& optimizer;
  std::vector<float> w;
  std::vector<float> slots;
  int64_t step = 0;
};

TEST_CASE("sgd without momentum subtracts lr * g", "[optimizer]") {
  auto opt = Make(Sgd(0.5f));
  REQUIRE(opt->SlotsPerElement() == 0);
  Block b(*opt, {1.0f});
  b.Step({1.0f});  // 1 - 0.5*1 = 0.5
  CHECK(b.w[0] == 0.5f);
  b.Step({2.0f});  // 0.5 - 0.5*2 = -0.5
  CHECK(b.w[0] == -0.5f);
  b.Step({4.0f});  // -0.5 - 0.5*4 = -2.5
  CHECK(b.w[0] == -2.5f);
}

TEST_CASE("sgd momentum keeps velocity v = mu*v + g and steps by lr*v", "[optimizer]") {
  auto opt = Make(Sgd(0.5f, 0.5f));
  REQUIRE(opt->SlotsPerElement() == 1);
  Block b(*opt, {1.0f});
  CHECK(b.slots[0] == 0.0f);
  b.Step({1.0f});  // v = 0.5*0 + 1 = 1;      w = 1 - 0.5*1 = 0.5
  CHECK(b.slots[0] == 1.0f);
  CHECK(b.w[0] == 0.5f);
  b.Step({2.0f});  // v = 0.5*1 + 2 = 2.5;    w = 0.5 - 0.5*2.5 = -0.75
  CHECK(b.slots[0] == 2.5f);
  CHECK(b.w[0] == -0.75f);
  b.Step({4.0f});  // v = 0.5*2.5 + 4 = 5.25; w = -0.75 - 0.5*5.25 = -3.375
  CHECK(b.slots[0] == 5.25f);
  CHECK(b.w[0] == -3.375f);
}

TEST_CASE("sgd nesterov steps by lr * (g + mu*v)", "[optimizer]") {
  auto opt = Make(Sgd(0.5f, 0.5f, /*nesterov=*/true));
  Block b(*opt, {1.0f});
  b.Step({1.0f});  // v = 1;    w = 1 - 0.5*(1 + 0.5*1) = 0.25
  CHECK(b.slots[0] == 1.0f);
  CHECK(b.w[0] == 0.25f);
  b.Step({2.0f});  // v = 2.5;  w = 0.25 - 0.5*(2 + 0.5*2.5) = -1.375
  CHECK(b.slots[0] == 2.5f);
  CHECK(b.w[0] == -1.375f);
  b.Step({4.0f});  // v = 5.25; w = -1.375 - 0.5*(4 + 0.5*5.25) = -4.6875
  CHECK(b.slots[0] == 5.25f);
  CHECK(b.w[0] == -4.6875f);
}

TEST_CASE("sgd weight decay adds wd * w to the gradient", "[optimizer]") {
  auto opt = Make(Sgd(0.5f, 0.0f, false, /*wd=*/0.5f));
  Block b(*opt, {2.0f});
  b.Step({1.0f});  // g' = 1 + 0.5*2 = 2;       w = 2 - 0.5*2 = 1
  CHECK(b.w[0] == 1.0f);
  b.Step({1.0f});  // g' = 1 + 0.5*1 = 1.5;     w = 1 - 0.5*1.5 = 0.25
  CHECK(b.w[0] == 0.25f);
  b.Step({1.0f});  // g' = 1 + 0.5*0.25 = 1.125; w = 0.25 - 0.5*1.125 = -0.3125
  CHECK(b.w[0] == -0.3125f);
}

TEST_CASE("adagrad divides by the root of the summed squared gradients", "[optimizer]") {
  SECTION("eps 0, accumulator starting at 0") {
    auto opt = Make(Adagrad(0.5f, 0.0f, 0.0f));
    Block b(*opt, {0.0f});
    b.Step({3.0f});  // acc = 9;   w = 0 - 0.5*3/3 = -0.5
    CHECK(b.slots[0] == 9.0f);
    CHECK(b.w[0] == -0.5f);
    b.Step({4.0f});  // acc = 25;  w = -0.5 - 0.5*4/5 = -0.9
    CHECK(b.slots[0] == 25.0f);
    CHECK_THAT(b.w[0], WithinAbs(-0.9, kTol));
    b.Step({-12.0f});  // acc = 169; w = -0.9 + 0.5*12/13 = -0.438461538...
    CHECK(b.slots[0] == 169.0f);
    CHECK_THAT(b.w[0], WithinAbs(-0.43846153846, kTol));
  }
  SECTION("eps 0.5, accumulator starting at 4") {
    auto opt = Make(Adagrad(0.5f, 0.5f, 4.0f));
    Block b(*opt, {0.0f});
    CHECK(b.slots[0] == 4.0f);
    b.Step({2.0f});  // acc = 8; w = -0.5*2/(sqrt(8) + 0.5) = -1/3.32842712 = -0.30044221
    CHECK(b.slots[0] == 8.0f);
    CHECK_THAT(b.w[0], WithinAbs(-0.30044220964, kTol));
    b.Step({-1.0f});  // acc = 9; w = -0.30044221 + 0.5*1/(3 + 0.5) = -0.15758507
    CHECK(b.slots[0] == 9.0f);
    CHECK_THAT(b.w[0], WithinAbs(-0.15758506679, kTol));
    b.Step({0.0f});  // acc = 9; zero update
    CHECK(b.slots[0] == 9.0f);
    CHECK_THAT(b.w[0], WithinAbs(-0.15758506679, kTol));
  }
}

// Field case B07: after dedupe-and-sum, row b carries g = 4 and row a g = 2
// (dim 2), Adagrad lr 0.1, initial accumulator 0, eps 0, weights 0.
TEST_CASE("adagrad reproduces the B07 numbers exactly", "[optimizer]") {
  auto opt = Make(Adagrad(0.1f, 0.0f, 0.0f));
  Block row_b(*opt, {0.0f, 0.0f});
  Block row_a(*opt, {0.0f, 0.0f});
  row_b.Step({4.0f, 4.0f});  // acc = 16; w = -(0.1*4)/4 = -0.1 (0.1f*4 and /4 are exact)
  row_a.Step({2.0f, 2.0f});  // acc = 4;  w = -(0.1*2)/2 = -0.1
  CHECK(row_b.slots == std::vector<float>{16.0f, 16.0f});
  CHECK(row_a.slots == std::vector<float>{4.0f, 4.0f});
  CHECK(row_b.w == std::vector<float>{-0.1f, -0.1f});
  CHECK(row_a.w == std::vector<float>{-0.1f, -0.1f});
}

TEST_CASE("adagrad weight decay adds wd * w to the gradient", "[optimizer]") {
  auto opt = Make(Adagrad(0.5f, 0.0f, 0.0f, /*wd=*/1.0f));
  Block b(*opt, {1.0f});
  b.Step({1.0f});  // g' = 2;   acc = 4;    w = 1 - 0.5*2/2 = 0.5
  CHECK(b.w[0] == 0.5f);
  b.Step({1.0f});  // g' = 1.5; acc = 6.25; w = 0.5 - 0.5*1.5/2.5 = 0.2
  CHECK(b.slots[0] == 6.25f);
  CHECK_THAT(b.w[0], WithinAbs(0.2, kTol));
  b.Step({1.0f});  // g' = 1.2; acc = 7.69; w = 0.2 - 0.6/2.77308492 = -0.01636553
  CHECK_THAT(b.slots[0], WithinAbs(7.69, 4 * kTol));  // acc ~ 8: ulp 4.8e-7
  CHECK_THAT(b.w[0], WithinAbs(-0.01636553379, kTol));
}

TEST_CASE("a zero gradient on a zero accumulator with eps 0 leaves w unchanged",
          "[optimizer]") {
  // 0/0 must count as a zero update: sqrt(0) + 0 = 0 would otherwise give NaN.
  SECTION("adagrad") {
    auto opt = Make(Adagrad(0.1f, 0.0f, 0.0f));
    Block b(*opt, {0.75f, -2.0f, 0.0f});
    b.Step({0.0f, 0.0f, 0.0f});
    b.Step({0.0f, 0.0f, 0.0f});
    CHECK(b.w == std::vector<float>{0.75f, -2.0f, 0.0f});
    CHECK(b.slots == std::vector<float>{0.0f, 0.0f, 0.0f});
  }
  SECTION("adam") {
    auto opt = Make(Adam(0.1f, 0.9f, 0.999f, 0.0f));
    Block b(*opt, {0.75f, -2.0f, 0.0f});
    b.Step({0.0f, 0.0f, 0.0f});
    CHECK(b.w == std::vector<float>{0.75f, -2.0f, 0.0f});
  }
}

TEST_CASE("adam follows Kingma and Ba's Algorithm 1 over three steps", "[optimizer]") {
  SECTION("b1 0.5, b2 0.75, eps 0") {
    auto opt = Make(Adam(0.1f, 0.5f, 0.75f, 0.0f));
    REQUIRE(opt->SlotsPerElement() == 2);
    Block b(*opt, {0.0f});
    // t=1, g=1:  m = 0.5, v = 0.25; mhat = 0.5/0.5 = 1, vhat = 0.25/0.25 = 1;
    //            w = 0 - 0.1*1/1 = -0.1
    b.Step({1.0f});
    CHECK(b.slots == std::vector<float>{0.5f, 0.25f});
    CHECK_THAT(b.w[0], WithinAbs(-0.1, kTol));
    // t=2, g=-1: m = 0.25 - 0.5 = -0.25, v = 0.1875 + 0.25 = 0.4375;
    //            mhat = -0.25/0.75 = -1/3, vhat = 0.4375/0.4375 = 1;
    //            w = -0.1 + 0.1/3 = -0.0666667
    b.Step({-1.0f});
    CHECK(b.slots == std::vector<float>{-0.25f, 0.4375f});
    CHECK_THAT(b.w[0], WithinAbs(-0.06666666667, kTol));
    // t=3, g=2:  m = -0.125 + 1 = 0.875, v = 0.328125 + 1 = 1.328125;
    //            mhat = 0.875/0.875 = 1, vhat = 1.328125/0.578125 = 2.2972973;
    //            w = -0.0666667 - 0.1/1.5156838 = -0.1326435
    b.Step({2.0f});
    CHECK(b.slots == std::vector<float>{0.875f, 1.328125f});
    CHECK_THAT(b.w[0], WithinAbs(-0.13264348969, kTol));
  }
  SECTION("b1 0.9, b2 0.999, eps 0.5") {
    auto opt = Make(Adam(0.1f, 0.9f, 0.999f, 0.5f));
    Block b(*opt, {0.0f});
    // t=1, g=1:  m = 0.1, v = 0.001; mhat = 1, vhat = 1; w = -0.1/1.5 = -0.0666667
    b.Step({1.0f});
    CHECK_THAT(b.w[0], WithinAbs(-0.06666666667, kTol));
    // t=2, g=-1: m = 0.09 - 0.1 = -0.01, v = 0.000999 + 0.001 = 0.001999;
    //            mhat = -0.01/0.19 = -0.0526316, vhat = 0.001999/0.001999 = 1;
    //            w = -0.0666667 + 0.1*0.0526316/1.5 = -0.0631579
    b.Step({-1.0f});
    CHECK_THAT(b.w[0], WithinAbs(-0.06315789474, kTol));
    // t=3, g=2:  m = -0.009 + 0.2 = 0.191, v = 0.001997001 + 0.004 = 0.005997001;
    //            mhat = 0.191/0.271 = 0.7047970, vhat = 0.005997001/0.002997001
    //            = 2.0010007; w = -0.0631579 - 0.1*0.7047970/(1.4145673 + 0.5)
    //            = -0.0999702
    b.Step({2.0f});
    CHECK_THAT(b.w[0], WithinAbs(-0.09997023585, kTol));
  }
}

TEST_CASE("adam takes beta1 0 and beta2 0 literally: each step is lr * sign(g)",
          "[optimizer]") {
  // m = g, v = g^2, no bias correction (1 - 0^t = 1): w -= 0.25 * g / |g|.
  auto opt = Make(Adam(0.25f, 0.0f, 0.0f, 0.0f));
  Block b(*opt, {1.0f});
  b.Step({2.0f});  // 1 - 0.25 = 0.75
  CHECK(b.w[0] == 0.75f);
  b.Step({-4.0f});  // 0.75 + 0.25 = 1
  CHECK(b.w[0] == 1.0f);
  b.Step({0.5f});  // 1 - 0.25 = 0.75
  CHECK(b.w[0] == 0.75f);
}

TEST_CASE("adam's first step moves each weight by about lr * sign(g)", "[optimizer]") {
  // At t = 1, mhat = g and vhat = g^2, so the step is lr * g / (|g| + eps):
  // lr * sign(g) to within a relative eps/|g| <= 1e-8/1e-3 = 1e-5.
  const float lr = 0.01f;
  auto opt = Make(Adam(lr, 0.9f, 0.999f, 1e-8f));
  const std::vector<float> g = {1e-3f, -1e-3f, 0.5f, -3.0f, 1e3f, -7e2f, 42.0f};
  std::vector<float> w0(g.size());
  for (size_t i = 0; i < w0.size(); ++i) w0[i] = 0.125f * static_cast<float>(i) - 0.5f;
  Block b(*opt, w0);
  b.Step(g);
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << " g=" << g[i]);
    const double moved = static_cast<double>(b.w[i]) - w0[i];
    CHECK_THAT(moved, WithinAbs(g[i] > 0 ? -lr : lr, lr * 1e-4));
  }
}

TEST_CASE("adam optimizers with different hyper-parameters interleave correctly",
          "[optimizer]") {
  // Apply caches the last step's bias-correction constants per thread; calls
  // alternating between optimizers at the same step must not share them.
  // At t = 1 with eps 0, mhat/sqrt(vhat) = sign(g) exactly: w = -lr.
  auto a = Make(Adam(0.25f, 0.5f, 0.75f, 0.0f));
  auto b = Make(Adam(0.5f, 0.5f, 0.75f, 0.0f));
  auto c = Make(Adam(0.25f, 0.0f, 0.0f, 0.0f));
  Block ba(*a, {0.0f}), bb(*b, {0.0f}), bc(*c, {0.0f});
  ba.Step({1.0f});
  bb.Step({1.0f});
  bc.Step({1.0f});
  CHECK(ba.w[0] == -0.25f);
  CHECK(bb.w[0] == -0.5f);
  CHECK(bc.w[0] == -0.25f);
  // t = 2, g = 1 again: m = 0.75, v = 0.4375, bias corrections 0.75 and
  // 0.4375, so mhat = vhat = 1 and each moves by lr once more.
  ba.Step({1.0f});
  bb.Step({1.0f});
  CHECK_THAT(ba.w[0], WithinAbs(-0.5, kTol));
  CHECK_THAT(bb.w[0], WithinAbs(-1.0, kTol));
}

TEST_CASE("adam weight decay adds wd * w to the gradient", "[optimizer]") {
  auto opt = Make(Adam(0.1f, 0.5f, 0.75f, 0.0f, /*wd=*/0.5f));
  Block b(*opt, {2.0f});
  // t=1: g' = 0 + 0.5*2 = 1; mhat = vhat = 1; w = 2 - 0.1 = 1.9
  b.Step({0.0f});
  CHECK_THAT(b.w[0], WithinAbs(1.9, kTol));
  // t=2: g' = 0.95; m = 0.725, v = 0.413125; mhat = 0.9666667, vhat = 0.9442857;
  //      w = 1.9 - 0.1*0.9666667/0.9717436 = 1.8005225
  b.Step({0.0f});
  CHECK_THAT(b.w[0], WithinAbs(1.80052246081, kTol));
  // t=3: g' = 0.9002612; m = 0.8126306, v = 0.5124613; mhat = 0.9287207,
  //      vhat = 0.8864196; w = 1.8005225 - 0.1*0.9287207/0.9414986 = 1.7018796
  b.Step({0.0f});
  CHECK_THAT(b.w[0], WithinAbs(1.70187964606, kTol));
}

// Cuts a block of n elements into consecutive sub-blocks and applies the
// optimizer to each, keeping each sub-block's slots in its own slot-major
// buffer as the interface lays them out.
struct ChunkedBlock {
  ChunkedBlock(const Optimizer& opt, const std::vector<float>& initial,
               const std::vector<size_t>& sizes)
      : optimizer(opt), w(initial) {
    size_t offset = 0;
    for (size_t k = 0; offset < w.size(); ++k) {
      const size_t len = std::min(sizes[k % sizes.size()], w.size() - offset);
      chunks.push_back({offset, len});
      slots.emplace_back(optimizer.SlotsPerElement() * len);
      optimizer.InitSlots(slots.back().data(), len);
      offset += len;
    }
  }
  void Step(const std::vector<float>& g, int64_t step) {
    for (size_t k = 0; k < chunks.size(); ++k) {
      const auto [offset, len] = chunks[k];
      optimizer.Apply(w.data() + offset, slots[k].data(), g.data() + offset, len,
                      step);
    }
  }
  // Slot s of element i, for comparison with a whole block's slots[s * n + i].
  float Slot(int s, size_t i) const {
    for (size_t k = 0; k < chunks.size(); ++k) {
      const auto [offset, len] = chunks[k];
      if (i < offset + len) return slots[k][s * len + (i - offset)];
    }
    FAIL("element out of range");
    return 0;
  }
  const Optimizer& optimizer;
  std::vector<float> w;
  std::vector<std::pair<size_t, size_t>> chunks;  // (offset, length)
  std::vector<std::vector<float>> slots;
};

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Positions where two arrays of one size hold different bits.
size_t DifferentBits(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += SameBits(a[i], b[i]) ? 0 : 1;
  return n;
}

// Each update rule and variant, with and without weight decay, for the
// bit-for-bit tests.
std::vector<v1::OptimizerSpec> EveryRule() {
  return {Sgd(0.01f, 0.0f, false, 0.01f),         Sgd(0.01f, 0.9f, false, 0.0f),
          Sgd(0.01f, 0.9f, true, 1e-4f),          Adagrad(0.1f, 1e-10f, 0.1f, 0.01f),
          Adagrad(0.1f, 0.0f, 0.0f),              Adam(1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f),
          Adam(1e-3f, 0.9f, 0.999f, 0.0f)};
}

TEST_CASE("applying to a block or to its sub-blocks gives bit-identical results",
          "[optimizer]") {
  const auto spec = GENERATE(from_range(EveryRule()));
  // Element by element, and sizes around the vector widths (4, 8, 16 lanes)
  // so that vector bodies and scalar tails both meet every element.
  const auto sizes = GENERATE(std::vector<size_t>{1},
                              std::vector<size_t>{3, 17, 1, 64, 5, 33, 8, 100, 2});
  INFO("spec: " << spec.ShortDebugString() << " chunks: " << sizes.size());
  auto opt = Make(spec);

  constexpr size_t kN = 1000;
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w0(kN);
  for (float& x : w0) x = dist(rng);
  Block whole(*opt, w0);
  ChunkedBlock chunked(*opt, w0, sizes);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g(kN);
    for (size_t i = 0; i < kN; ++i) g[i] = (i % 7 == 0) ? 0.0f : dist(rng);
    whole.optimizer.Apply(whole.w.data(), whole.slots.data(), g.data(), kN, step);
    chunked.Step(g, step);
  }
  size_t mismatches = 0;
  for (size_t i = 0; i < kN; ++i) {
    if (!SameBits(whole.w[i], chunked.w[i])) ++mismatches;
    for (int s = 0; s < opt->SlotsPerElement(); ++s) {
      if (!SameBits(whole.slots[s * kN + i], chunked.Slot(s, i))) ++mismatches;
    }
    if (!std::isfinite(whole.w[i])) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(whole.w != w0);  // the steps did move the weights
}

TEST_CASE("a gradient scale folded into the update gives the bits of the gradient scaled first",
          "[optimizer]") {
  const auto spec = GENERATE(from_range(EveryRule()));
  // A BSP mean's scales: 1 / workers, exact for 2 and 4, rounded for 3.
  const float scale = GENERATE(1.0f, 0.5f, 1.0f / 3.0f, 0.25f);
  INFO("spec: " << spec.ShortDebugString() << " scale: " << scale);
  auto opt = Make(spec);
  constexpr size_t kN = 333;
  std::mt19937 rng(20261205);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  std::vector<float> w0(kN);
  for (float& x : w0) x = dist(rng) * 1e-3f;
  Block folded(*opt, w0);
  Block scaled_first(*opt, w0);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g(kN);
    for (size_t i = 0; i < kN; ++i) g[i] = (i % 5 == 0) ? 0.0f : dist(rng);
    std::vector<float> gs(g);
    for (float& x : gs) x *= scale;
    opt->ApplyScaled(folded.w.data(), folded.slots.data(), g.data(), kN, step, scale);
    opt->Apply(scaled_first.w.data(), scaled_first.slots.data(), gs.data(), kN, step);
  }
  CHECK(DifferentBits(folded.w, scaled_first.w) + DifferentBits(folded.slots, scaled_first.slots) ==
        0);
  CHECK(folded.w != w0);
}

TEST_CASE("a gradient at any byte address gives the bits of an aligned one", "[optimizer]") {
  const auto spec = GENERATE(from_range(EveryRule()));
  // A push's rows are read where the transport put them: 1, 2 or 3 bytes
  // past a float's alignment, through vector bodies and scalar tails.
  const size_t shift = GENERATE(1, 2, 3);
  INFO("spec: " << spec.ShortDebugString() << " shift: " << shift);
  auto opt = Make(spec);
  constexpr size_t kN = 203;
  std::mt19937 rng(20261206);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w0(kN);
  for (float& x : w0) x = dist(rng);
  Block aligned(*opt, w0);
  Block shifted(*opt, w0);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g(kN);
    for (float& x : g) x = dist(rng);
    std::string bytes(shift + kN * sizeof(float), '\0');
    std::memcpy(bytes.data() + shift, g.data(), kN * sizeof(float));
    const auto* at = reinterpret_cast<const UnalignedFloat*>(bytes.data() + shift);
    aligned.optimizer.Apply(aligned.w.data(), aligned.slots.data(), g.data(), kN, step);
    shifted.optimizer.Apply(shifted.w.data(), shifted.slots.data(), at, kN, step);
  }
  CHECK(DifferentBits(aligned.w, shifted.w) + DifferentBits(aligned.slots, shifted.slots) == 0);
  CHECK(aligned.w != w0);
}

TEST_CASE("ApplyRows gives the bits of Apply on each row in turn", "[optimizer]") {
  const auto spec = GENERATE(from_range(EveryRule()));
  INFO("spec: " << spec.ShortDebugString());
  auto opt = Make(spec);
  const size_t per = static_cast<size_t>(opt->SlotsPerElement());
  // Rows of 64 and 67 elements (vector bodies and tails), at scattered
  // places; steps that repeat and change (Adam's bias corrections), and
  // gradients 0 to 3 bytes past a float's alignment.
  const size_t n = GENERATE(size_t{64}, size_t{67});
  constexpr size_t kRows = 9;
  const std::vector<int64_t> steps = {1, 1, 4, 4, 4, 2, 7, 1, 1};
  const std::vector<size_t> places = {5, 0, 8, 3, 7, 1, 6, 2, 4};
  std::mt19937 rng(20261207);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w0(kRows * n), g(kRows * n);
  for (float& x : w0) x = dist(rng);
  for (float& x : g) x = dist(rng);
  std::vector<float> one_w = w0, rows_w = w0;
  std::vector<float> one_slots(kRows * n * per), rows_slots(kRows * n * per);
  opt->InitSlots(one_slots.data(), kRows * n);
  opt->InitSlots(rows_slots.data(), kRows * n);
  const size_t stride = (n + 1) * sizeof(float);  // a row's bytes and room for its shift
  std::string shifted(kRows * stride, '\0');
  // Arrays, not vectors: a template argument drops UnalignedFloat's attribute.
  float* w[kRows];
  float* slots[kRows];
  const UnalignedFloat* grads[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    const size_t at = places[r];
    char* dst = shifted.data() + r * stride + r % 4;
    std::memcpy(dst, g.data() + r * n, n * sizeof(float));
    grads[r] = reinterpret_cast<const UnalignedFloat*>(dst);
    w[r] = rows_w.data() + at * n;
    slots[r] = rows_slots.data() + at * n * per;
    opt->Apply(one_w.data() + at * n, one_slots.data() + at * n * per, g.data() + r * n, n,
               steps[r]);
  }
  opt->ApplyRows(w, slots, grads, steps.data(), kRows, n);
  CHECK(DifferentBits(one_w, rows_w) + DifferentBits(one_slots, rows_slots) == 0);
  CHECK(rows_w != w0);
}

TEST_CASE("slot counts and initial slot values follow the kind", "[optimizer]") {
  std::vector<float> slots(6, -1.0f);
  SECTION("plain sgd has none") {
    CHECK(Make(Sgd(0.1f))->SlotsPerElement() == 0);
  }
  SECTION("momentum starts at 0") {
    auto opt = Make(Sgd(0.1f, 0.9f));
    REQUIRE(opt->SlotsPerElement() == 1);
    opt->InitSlots(slots.data(), 3);
    CHECK(slots == std::vector<float>{0, 0, 0, -1, -1, -1});
  }
  SECTION("adagrad starts at initial_accumulator") {
    auto opt = Make(Adagrad(0.1f, 0.0f, 0.25f));
    REQUIRE(opt->SlotsPerElement() == 1);
    opt->InitSlots(slots.data(), 3);
    CHECK(slots == std::vector<float>{0.25f, 0.25f, 0.25f, -1, -1, -1});
  }
  SECTION("adam's m and v start at 0") {
    auto opt = Make(Adam(0.1f, 0.9f, 0.999f, 1e-8f));
    REQUIRE(opt->SlotsPerElement() == 2);
    opt->InitSlots(slots.data(), 3);
    CHECK(slots == std::vector<float>(6, 0.0f));
  }
}

TEST_CASE("bad hyper-parameters are InvalidArgument naming the field", "[optimizer]") {
  const float kInf = std::numeric_limits<float>::infinity();
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    v1::OptimizerSpec spec;
    std::string field;
  };
  const std::vector<Case> cases = {
      {Sgd(0.0f), "learning_rate"},
      {Sgd(-0.1f), "learning_rate"},
      {Sgd(kInf), "learning_rate"},
      {Sgd(kNaN), "learning_rate"},
      {Sgd(0.1f, 1.0f), "momentum"},
      {Sgd(0.1f, -0.5f), "momentum"},
      {Sgd(0.1f, kNaN), "momentum"},
      {Sgd(0.1f, 0.0f, /*nesterov=*/true), "nesterov"},
      {Sgd(0.1f, 0.9f, false, -1e-4f), "weight_decay"},
      {Adagrad(-1.0f, 0.0f, 0.0f), "learning_rate"},
      {Adagrad(0.1f, -1e-8f, 0.0f), "epsilon"},
      {Adagrad(0.1f, kInf, 0.0f), "epsilon"},
      {Adagrad(0.1f, 0.0f, -0.1f), "initial_accumulator"},
      {Adagrad(0.1f, 0.0f, kNaN), "initial_accumulator"},
      {Adagrad(0.1f, 0.0f, 0.0f, kInf), "weight_decay"},
      {Adam(0.0f, 0.9f, 0.999f, 1e-8f), "learning_rate"},
      {Adam(0.1f, 1.0f, 0.999f, 1e-8f), "beta1"},
      {Adam(0.1f, -0.1f, 0.999f, 1e-8f), "beta1"},
      {Adam(0.1f, 0.9f, 1.0f, 1e-8f), "beta2"},
      {Adam(0.1f, 0.9f, kNaN, 1e-8f), "beta2"},
      {Adam(0.1f, 0.9f, 0.999f, -1e-8f), "epsilon"},
      {Adam(0.1f, 0.9f, 0.999f, 1e-8f, -0.5f), "weight_decay"},
  };
  for (const Case& c : cases) {
    INFO("spec: " << c.spec.ShortDebugString());
    const auto result = MakeOptimizer(c.spec);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(result.status().message()), Contains(c.field));
  }
}

TEST_CASE("a spec without a known kind is InvalidArgument", "[optimizer]") {
  v1::OptimizerSpec spec = Sgd(0.1f);
  SECTION("unspecified") {
    spec.set_kind(v1::OPTIMIZER_KIND_UNSPECIFIED);
    const auto result = MakeOptimizer(spec);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(result.status().message()), Contains("kind"));
  }
  SECTION("a value this build does not know") {
    spec.set_kind(static_cast<v1::OptimizerKind>(42));
    const auto result = MakeOptimizer(spec);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(result.status().message()), Contains("kind 42"));
  }
}

TEST_CASE("fields another kind reads are ignored, and zeros are accepted where valid",
          "[optimizer]") {
  // An sgd spec carrying a bad beta1 still builds: sgd does not read it.
  v1::OptimizerSpec spec = Sgd(0.1f);
  spec.set_beta1(7.0f);
  CHECK(MakeOptimizer(spec).ok());
  // Adagrad eps 0 / accumulator 0 and Adam beta1 = beta2 = eps = 0 are valid.
  CHECK(MakeOptimizer(Adagrad(0.1f, 0.0f, 0.0f)).ok());
  CHECK(MakeOptimizer(Adam(0.1f, 0.0f, 0.0f, 0.0f)).ok());
}

}  // namespace
}  // namespace cairn
