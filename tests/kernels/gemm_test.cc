// GEMM through the CPU backend (OpenBLAS) and the reference, against
// hand-computed products.
#include "kernels/gemm/gemm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu_backend.h"

namespace cairn {
namespace {

// A = [[1,2,3],[4,5,6]] (2x3), B = [[7,8],[9,10],[11,12]] (3x2),
// A*B = [[58,64],[139,154]]: small integers, exact in float32.
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kAt = {1, 4, 2, 5, 3, 6};  // A^T stored row-major (3x2)
const std::vector<float> kB = {7, 8, 9, 10, 11, 12};
const std::vector<float> kBt = {7, 9, 11, 8, 10, 12};  // B^T stored row-major (2x3)
const std::vector<float> kAB = {58, 64, 139, 154};

using GemmFn = absl::Status (*)(Transpose, Transpose, int64_t, int64_t, int64_t, float,
                                const float*, int64_t, const float*, int64_t, float, float*,
                                int64_t);

absl::Status CpuGemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc) {
  static CpuBackend backend;
  return backend.Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

TEST_CASE("gemm computes the hand-computed product for every transpose combination",
          "[kernels][gemm]") {
  const GemmFn fn = GENERATE(&CpuGemm, &GemmReference);
  const auto [ta, tb] = GENERATE(table<Transpose, Transpose>({{Transpose::kNo, Transpose::kNo},
                                                              {Transpose::kYes, Transpose::kNo},
                                                              {Transpose::kNo, Transpose::kYes},
                                                              {Transpose::kYes, Transpose::kYes}}));
  const std::vector<float>& a = ta == Transpose::kYes ? kAt : kA;
  const std::vector<float>& b = tb == Transpose::kYes ? kBt : kB;
  const int64_t lda = ta == Transpose::kYes ? 2 : 3;
  const int64_t ldb = tb == Transpose::kYes ? 3 : 2;
  std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  REQUIRE(fn(ta, tb, 2, 2, 3, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), 2).ok());
  CHECK(c == kAB);  // beta = 0 ignored the NaNs; integers are exact

  // alpha = 2, beta = 0.5 on C = 1: 2 * AB + 0.5 (exact in float32).
  std::fill(c.begin(), c.end(), 1.0f);
  REQUIRE(fn(ta, tb, 2, 2, 3, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), 2).ok());
  CHECK(c == std::vector<float>{116.5f, 128.5f, 278.5f, 308.5f});
}

TEST_CASE("gemm honours leading dimensions wider than the matrices", "[kernels][gemm]") {
  const GemmFn fn = GENERATE(&CpuGemm, &GemmReference);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // A padded to 4 columns, B to 3, C to 3; the padding must be neither read nor written.
  const std::vector<float> a = {1, 2, 3, nan, 4, 5, 6, nan};
  const std::vector<float> b = {7, 8, nan, 9, 10, nan, 11, 12, nan};
  std::vector<float> c = {0, 0, -1, 0, 0, -1};
  REQUIRE(
      fn(Transpose::kNo, Transpose::kNo, 2, 2, 3, 1.0f, a.data(), 4, b.data(), 3, 0.0f, c.data(), 3)
          .ok());
  CHECK(c == std::vector<float>{58, 64, -1, 139, 154, -1});
}

TEST_CASE("gemm with k = 0 scales C by beta", "[kernels][gemm]") {
  CpuBackend backend;
  std::vector<float> c = {1, 2, 3, 4};
  REQUIRE(backend
              .Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f,
                    c.data(), 2)
              .ok());
  CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
}

TEST_CASE("gemm rejects bad sizes and leading dimensions", "[kernels][gemm]") {
  CpuBackend backend;
  std::vector<float> buf(16, 0.0f);
  const float* p = buf.data();
  float* c = buf.data();
  CHECK(backend.Gemm(Transpose::kNo, Transpose::kNo, -1, 2, 2, 1, p, 2, p, 2, 0, c, 2).code() ==
        absl::StatusCode::kInvalidArgument);
  // lda must be >= k = 3 when A is not transposed.
  const absl::Status s =
      backend.Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 3, 1, p, 2, p, 2, 0, c, 2);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("lda=2"));
  // Transposed A (k x m stored) needs lda >= m.
  CHECK(backend.Gemm(Transpose::kYes, Transpose::kNo, 4, 2, 3, 1, p, 3, p, 2, 0, c, 2).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(
      backend.Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 2, 1, nullptr, 2, p, 2, 0, c, 2).code() ==
      absl::StatusCode::kInvalidArgument);
}

TEST_CASE("OpenBLAS gemm agrees with the double-accumulating reference on random shapes",
          "[kernels][gemm]") {
  const int64_t m = GENERATE(1, 7, 64);
  const int64_t n = GENERATE(1, 33, 256);
  const int64_t k = GENERATE(1, 10, 784);
  const auto [ta, tb] = GENERATE(table<Transpose, Transpose>({{Transpose::kNo, Transpose::kYes},
                                                              {Transpose::kYes, Transpose::kNo},
                                                              {Transpose::kNo, Transpose::kNo}}));
  std::mt19937 rng(static_cast<unsigned>(m * 1000003 + n * 1009 + k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  for (size_t i = 0; i < c.size(); ++i) c[i] = ref[i] = u(rng);
  const int64_t lda = ta == Transpose::kYes ? m : k, ldb = tb == Transpose::kYes ? k : n;
  CpuBackend backend;
  REQUIRE(
      backend.Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), n).ok());
  REQUIRE(
      GemmReference(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, ref.data(), n).ok());
  // float32 accumulation of k products of magnitude <= 1: error grows ~ sqrt(k) * 2^-24
  // per term; 1e-4 absolute is ample for k <= 784 and still catches a wrong element.
  for (size_t i = 0; i < c.size(); ++i) {
    REQUIRE_THAT(c[i], Catch::Matchers::WithinAbs(ref[i], 1e-4));
  }
}

}  // namespace
}  // namespace cairn
