// The MLP's gradients against finite differences of an independent
// double-precision forward pass, and (with a GPU) CUDA against CPU.
#include "worker/trainer/mlp.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu_backend.h"
#include "tests/testing/skip.h"

namespace cairn {
namespace {

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Mean cross-entropy of the MLP in double precision, written from the
// definition (z = a W^T + b, ReLU between layers, softmax on the last), not
// from the code under test. min_abs_hidden receives the smallest |z| of any
// hidden unit, to keep finite differences away from ReLU kinks.
double ReferenceLoss(const std::vector<int>& layers, const std::vector<double>& p,
                     const std::vector<float>& x, const std::vector<int32_t>& y,
                     double* min_abs_hidden = nullptr) {
  const size_t batch = y.size();
  double total = 0;
  double min_abs = INFINITY;
  for (size_t r = 0; r < batch; ++r) {
    std::vector<double> a(x.begin() + r * layers[0], x.begin() + (r + 1) * layers[0]);
    size_t offset = 0;
    for (size_t l = 0; l + 1 < layers.size(); ++l) {
      const int in = layers[l], out = layers[l + 1];
      const double* w = p.data() + offset;
      const double* b = w + size_t(out) * in;
      offset += size_t(out) * in + out;
      std::vector<double> z(out);
      for (int o = 0; o < out; ++o) {
        z[o] = b[o];
        for (int i = 0; i < in; ++i) z[o] += a[i] * w[o * in + i];
        if (l + 2 < layers.size()) {
          min_abs = std::min(min_abs, std::abs(z[o]));
          z[o] = std::max(0.0, z[o]);
        }
      }
      a = z;
    }
    double max = a[0];
    for (double v : a) max = std::max(max, v);
    double sum = 0;
    for (double v : a) sum += std::exp(v - max);
    total += max + std::log(sum) - a[y[r]];
  }
  if (min_abs_hidden != nullptr) *min_abs_hidden = min_abs;
  return total / static_cast<double>(batch);
}

TEST_CASE("mlp gradients match finite differences of a double-precision forward pass",
          "[worker][mlp]") {
  const std::vector<int> layers =
      GENERATE(std::vector<int>{5, 4, 3}, std::vector<int>{6, 5, 4, 3}, std::vector<int>{3, 2});
  const int batch = 3;
  CpuBackend backend;
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&backend, layers, batch);
  REQUIRE(mlp.ok());
  const size_t n = (*mlp)->num_params();
  const std::vector<float> params = Random(n, 11), x = Random(batch * layers[0], 12);
  const std::vector<int32_t> y = {0, static_cast<int32_t>(layers.back() - 1), 1};
  std::vector<float> grads(n, NAN);
  absl::StatusOr<double> loss = (*mlp)->TrainStep(params, x, y, absl::MakeSpan(grads));
  REQUIRE(loss.ok());

  std::vector<double> p(params.begin(), params.end());
  double min_abs_hidden = 0;
  const double ref_loss = ReferenceLoss(layers, p, x, y, &min_abs_hidden);
  // float32 forward of O(1) values vs double: ~1e-7 relative.
  CHECK_THAT(*loss, WithinRel(ref_loss, 1e-6));
  // Central differences with h = 1e-6 are exact to ~1e-10 unless a hidden unit
  // sits within h of the ReLU kink; the seeds above keep them far away.
  REQUIRE(min_abs_hidden > 1e-3);

  constexpr double h = 1e-6;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> plus = p, minus = p;
    plus[i] += h;
    minus[i] -= h;
    const double numeric =
        (ReferenceLoss(layers, plus, x, y) - ReferenceLoss(layers, minus, x, y)) / (2 * h);
    // Analytic gradients are computed in float32: a few ulps of O(1) terms.
    INFO("parameter " << i << " of " << n);
    CHECK_THAT(grads[i], WithinAbs(numeric, 2e-6 + 1e-4 * std::abs(numeric)));
  }
}

TEST_CASE("mlp gradients match finite differences of its own float forward pass", "[worker][mlp]") {
  const std::vector<int> layers = {5, 4, 3};
  const int batch = 3;
  CpuBackend backend;
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&backend, layers, batch);
  REQUIRE(mlp.ok());
  const size_t n = (*mlp)->num_params();
  std::vector<float> params = Random(n, 21);
  const std::vector<float> x = Random(batch * layers[0], 22);
  const std::vector<int32_t> y = {2, 0, 1};
  std::vector<float> grads(n);
  REQUIRE((*mlp)->TrainStep(params, x, y, absl::MakeSpan(grads)).ok());
  auto mean_loss = [&](const std::vector<float>& q) {
    absl::StatusOr<MlpEval> eval = (*mlp)->Evaluate(q, x, y);
    REQUIRE(eval.ok());
    return eval->loss_sum / eval->count;
  };
  constexpr float h = 1e-2f;  // float32: large h, so rounding (~1e-7 / h) stays small
  for (size_t i = 0; i < n; ++i) {
    std::vector<float> plus = params, minus = params;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (mean_loss(plus) - mean_loss(minus)) / (2.0 * h);
    // O(h^2) truncation plus ~1e-5 rounding.
    INFO("parameter " << i);
    CHECK_THAT(grads[i], WithinAbs(numeric, 1e-3));
  }
}

TEST_CASE("mlp layout puts each layer's weight [out, in] before its bias", "[worker][mlp]") {
  CpuBackend backend;
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&backend, {784, 256, 128, 10}, 64);
  REQUIRE(mlp.ok());
  const std::vector<MlpTensor>& t = (*mlp)->tensors();
  REQUIRE(t.size() == 6);
  CHECK(t[0].shape == std::vector<int64_t>{256, 784});
  CHECK(t[1].shape == std::vector<int64_t>{256});
  CHECK(t[1].offset == 256 * 784);
  CHECK(t[5].shape == std::vector<int64_t>{10});
  CHECK((*mlp)->num_params() == 256 * 784 + 256 + 128 * 256 + 128 + 10 * 128 + 10);
}

TEST_CASE("mlp's first weight gradient written after the step, block by block, has the bits of "
          "the whole step's",
          "[worker][mlp]") {
  CpuBackend backend;
  const std::vector<int> layers = {20, 13, 6, 4};  // 13 rows: blocks of unequal size
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&backend, layers, 8);
  REQUIRE(mlp.ok());
  const std::vector<float> params = Random((*mlp)->num_params(), 1);
  const std::vector<float> x = Random(8 * 20, 2);
  const std::vector<int32_t> y = {0, 1, 2, 3, 3, 2, 1, 0};
  std::vector<float> whole((*mlp)->num_params());
  absl::StatusOr<double> loss = (*mlp)->TrainStep(params, x, y, absl::MakeSpan(whole));
  REQUIRE(loss.ok());

  constexpr float kUnwritten = -7.0f;
  std::vector<float> later((*mlp)->num_params(), kUnwritten);
  absl::StatusOr<double> later_loss =
      (*mlp)->TrainStepFirstWeightsLater(params, x, y, absl::MakeSpan(later));
  REQUIRE(later_loss.ok());
  CHECK(*later_loss == *loss);
  const size_t first = 13 * 20;  // tensor 0, at offset 0
  // Everything but the first weight gradient is written on return.
  for (size_t i = 0; i < first; ++i) REQUIRE(later[i] == kUnwritten);
  for (size_t i = first; i < later.size(); ++i) REQUIRE(later[i] == whole[i]);
  std::vector<uint64_t> counts;
  REQUIRE((*mlp)
              ->WriteFirstWeights([&](uint64_t bytes) {
                // Each count covers what is written back from the end, and
                // no more: the rows are written last first.
                const size_t floats = bytes / sizeof(float);
                REQUIRE(floats <= later.size());
                CHECK(floats > later.size() - first);
                const size_t from = later.size() - floats;
                CHECK(std::all_of(later.begin() + static_cast<std::ptrdiff_t>(from), later.end(),
                                  [](float v) { return v != kUnwritten; }));
                if (from > 0) CHECK(later[from - 1] == kUnwritten);
                counts.push_back(bytes);
              })
              .ok());
  CHECK(counts.size() == static_cast<size_t>(Mlp::kFirstWeightBlocks));
  CHECK(std::is_sorted(counts.begin(), counts.end()));
  CHECK(counts.back() == later.size() * sizeof(float));
  CHECK(std::memcmp(later.data(), whole.data(), whole.size() * sizeof(float)) == 0);
  // Written once: a second call has no step to finish.
  CHECK((*mlp)->WriteFirstWeights([](uint64_t) {}).code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("mlp rejects bad layers and wrongly sized buffers", "[worker][mlp]") {
  CpuBackend backend;
  CHECK(Mlp::Create(&backend, {5}, 4).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Mlp::Create(&backend, {5, 0, 3}, 4).status().code() == absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&backend, {5, 4, 3}, 2);
  REQUIRE(mlp.ok());
  std::vector<float> params((*mlp)->num_params()), grads((*mlp)->num_params());
  std::vector<float> x(15);
  std::vector<int32_t> y = {0, 1, 2};  // batch 3 > max_batch 2
  CHECK((*mlp)->TrainStep(params, x, y, absl::MakeSpan(grads)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  std::vector<float> short_params(3);
  CHECK(
      (*mlp)
          ->TrainStep(short_params, absl::MakeSpan(x).subspan(0, 10), {0, 1}, absl::MakeSpan(grads))
          .status()
          .code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("CUDA mlp step and evaluation match the CPU ones", "[gpu][worker][mlp]") {
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda");
  if (!cuda.ok()) {
    // tools/gpu-check sets CAIRN_REQUIRE_GPU: there a missing GPU is a failure.
    if (std::getenv("CAIRN_REQUIRE_GPU") != nullptr) FAIL(cuda.status().message());
    testing::SkipTest(absl::StrCat("no CUDA backend here: ", cuda.status().message()));
  }
  CpuBackend cpu;
  const std::vector<int> layers = {784, 256, 128, 10};
  absl::StatusOr<std::unique_ptr<Mlp>> on_gpu = Mlp::Create(cuda->get(), layers, 1000);
  absl::StatusOr<std::unique_ptr<Mlp>> on_cpu = Mlp::Create(&cpu, layers, 1000);
  REQUIRE(on_gpu.ok());
  REQUIRE(on_cpu.ok());
  const size_t n = (*on_cpu)->num_params();
  std::vector<float> params = Random(n, 31);
  for (float& v : params) v *= 0.05f;  // keep activations O(1)
  const int batch = 64;
  std::vector<float> x = Random(batch * 784, 32);
  for (float& v : x) v = std::abs(v);
  std::vector<int32_t> y(batch);
  for (int i = 0; i < batch; ++i) y[i] = i % 10;
  std::vector<float> g_gpu(n), g_cpu(n);
  absl::StatusOr<double> l_gpu = (*on_gpu)->TrainStep(params, x, y, absl::MakeSpan(g_gpu));
  absl::StatusOr<double> l_cpu = (*on_cpu)->TrainStep(params, x, y, absl::MakeSpan(g_cpu));
  REQUIRE(l_gpu.ok());
  REQUIRE(l_cpu.ok());
  // Same math, different summation orders and expf: ~1e-6 relative.
  CHECK_THAT(*l_gpu, WithinRel(*l_cpu, 1e-5));
  for (size_t i = 0; i < n; ++i) REQUIRE_THAT(g_gpu[i], WithinAbs(g_cpu[i], 1e-5));
  absl::StatusOr<MlpEval> e_gpu = (*on_gpu)->Evaluate(params, x, y);
  absl::StatusOr<MlpEval> e_cpu = (*on_cpu)->Evaluate(params, x, y);
  REQUIRE(e_gpu.ok());
  REQUIRE(e_cpu.ok());
  CHECK(e_gpu->count == e_cpu->count);
  CHECK_THAT(e_gpu->loss_sum, WithinRel(e_cpu->loss_sum, 1e-5));
}

}  // namespace
}  // namespace cairn
