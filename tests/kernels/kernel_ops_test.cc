// The CPU backend's element-wise and reduction ops (the kernels' CPU
// references) on hand-computed examples, and MakeBackend's choices.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/device_buffer.h"

namespace cairn {
namespace {

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("bias activation adds the bias per column and applies ReLU on request", "[kernels]") {
  CpuBackend backend;
  const std::vector<float> bias = {1.0f, -2.0f, 0.5f};
  std::vector<float> y = {0.0f, 1.0f, -1.0f, -3.0f, 3.0f, 0.25f};  // 2 x 3
  SECTION("with ReLU") {
    REQUIRE(backend.BiasActivation(y.data(), bias.data(), 2, 3, true).ok());
    CHECK(y == std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.75f});
  }
  SECTION("without ReLU (the logits layer)") {
    REQUIRE(backend.BiasActivation(y.data(), bias.data(), 2, 3, false).ok());
    CHECK(y == std::vector<float>{1.0f, -1.0f, -0.5f, -2.0f, 1.0f, 0.75f});
  }
  SECTION("zero rows is a no-op; zero columns is an error") {
    CHECK(backend.BiasActivation(nullptr, bias.data(), 0, 3, true).ok());
    CHECK(backend.BiasActivation(y.data(), bias.data(), 2, 0, true).code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("relu backward keeps the gradient only where the activation is positive", "[kernels]") {
  CpuBackend backend;
  const std::vector<float> act = {0.0f, 2.0f, 0.0f, 1e-30f};
  std::vector<float> grad = {5.0f, 6.0f, -7.0f, 8.0f};
  REQUIRE(backend.ReluBackward(act.data(), grad.data(), 4).ok());
  CHECK(grad == std::vector<float>{0.0f, 6.0f, 0.0f, 8.0f});
}

TEST_CASE("bias gradient is the column sum", "[kernels]") {
  CpuBackend backend;
  const std::vector<float> grad = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3 x 3
  std::vector<float> db(3, -1.0f);
  REQUIRE(backend.BiasGrad(grad.data(), 3, 3, db.data()).ok());
  CHECK(db == std::vector<float>{12, 15, 18});
  REQUIRE(backend.BiasGrad(grad.data(), 0, 3, db.data()).ok());
  CHECK(db == std::vector<float>{0, 0, 0});
}

TEST_CASE("softmax cross-entropy matches a hand-computed example", "[kernels][softmax]") {
  CpuBackend backend;
  // Row 0: logits [1, 2, 3], label 2: loss = log(e + e^2 + e^3) - 3 = 0.4076059644;
  //        softmax = [0.0900306, 0.2447285, 0.6652410].
  // Row 1: logits [0, 0, 0], label 1: loss = log 3 = 1.0986122887; softmax = 1/3 each.
  const std::vector<float> logits = {1, 2, 3, 0, 0, 0};
  const std::vector<int32_t> labels = {2, 1};
  std::vector<float> grad(6);
  absl::StatusOr<double> sum =
      backend.SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 3, 0.5f, grad.data());
  REQUIRE(sum.ok());
  // float32 logits, double arithmetic: 1e-6 relative is far below any real error.
  CHECK_THAT(*sum, WithinRel(0.4076059644 + 1.0986122887, 1e-6));
  const std::vector<double> expected = {0.5 * 0.0900306, 0.5 * 0.2447285,     0.5 * (0.6652410 - 1),
                                        0.5 / 3,         0.5 * (1.0 / 3 - 1), 0.5 / 3};
  for (size_t i = 0; i < grad.size(); ++i) CHECK_THAT(grad[i], WithinAbs(expected[i], 1e-6));

  SECTION("without a gradient buffer only the loss is computed") {
    absl::StatusOr<double> loss_only =
        backend.SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 3, 0.5f, nullptr);
    REQUIRE(loss_only.ok());
    CHECK(*loss_only == *sum);
  }
}

TEST_CASE("softmax cross-entropy stays finite for huge logits", "[kernels][softmax]") {
  CpuBackend backend;
  const std::vector<float> logits = {1000.0f, 0.0f, -1000.0f};
  const std::vector<int32_t> right = {0}, wrong = {2};
  std::vector<float> grad(3);
  absl::StatusOr<double> low =
      backend.SoftmaxCrossEntropy(logits.data(), right.data(), 1, 3, 1.0f, grad.data());
  REQUIRE(low.ok());
  CHECK_THAT(*low, WithinAbs(0.0, 1e-12));
  absl::StatusOr<double> high =
      backend.SoftmaxCrossEntropy(logits.data(), wrong.data(), 1, 3, 1.0f, grad.data());
  REQUIRE(high.ok());
  CHECK_THAT(*high, WithinRel(2000.0, 1e-9));
  CHECK(grad == std::vector<float>{1.0f, 0.0f, -1.0f});
}

TEST_CASE("softmax cross-entropy rejects a label out of range, naming the row",
          "[kernels][softmax]") {
  CpuBackend backend;
  const std::vector<float> logits = {0, 0, 0, 0};
  const std::vector<int32_t> labels = {1, 2};
  absl::StatusOr<double> loss =
      backend.SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 2, 1.0f, nullptr);
  REQUIRE(loss.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(loss.status().message()), Catch::Contains("label 2 of row 1"));
}

TEST_CASE("count correct compares the first argmax with the label", "[kernels]") {
  CpuBackend backend;
  const std::vector<float> logits = {0.1f,  0.7f,  0.2f,   // argmax 1
                                     0.5f,  0.5f,  0.0f,   // tie: first maximum, 0
                                     -1.0f, -2.0f, -0.5f,  // argmax 2
                                     0.0f,  0.0f,  1.0f};  // argmax 2
  const std::vector<int32_t> labels = {1, 1, 2, 0};
  absl::StatusOr<int64_t> correct = backend.CountCorrect(logits.data(), labels.data(), 4, 3);
  REQUIRE(correct.ok());
  CHECK(*correct == 2);
}

TEST_CASE("device buffers round-trip through the CPU backend", "[kernels]") {
  CpuBackend backend;
  absl::StatusOr<DeviceBuffer<float>> buffer = DeviceBuffer<float>::Create(&backend, 4);
  REQUIRE(buffer.ok());
  const std::vector<float> in = {1, 2, 3, 4};
  REQUIRE(buffer->CopyFrom(in).ok());
  std::vector<float> out(2);
  REQUIRE(buffer->CopyTo(absl::MakeSpan(out), 2).ok());
  CHECK(out == std::vector<float>{3, 4});
  CHECK(buffer->CopyTo(absl::MakeSpan(out), 3).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("MakeBackend picks a backend by name and explains a missing GPU", "[kernels]") {
  absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu");
  REQUIRE(cpu.ok());
  CHECK((*cpu)->kind() == "cpu");
  CHECK((*cpu)->host_accessible());

  absl::StatusOr<std::unique_ptr<Backend>> any = MakeBackend("auto");
  REQUIRE(any.ok());
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda");
  if ((*any)->kind() == "cpu") {
    // auto fell back to the CPU, so there is no usable GPU: "cuda" must say why.
    REQUIRE(cuda.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(cuda.status().message()),
               Catch::Contains(BuiltWithCuda() ? "no CUDA device" : "without CUDA support"));
  } else {
    CHECK(cuda.ok());
  }

  absl::StatusOr<std::unique_ptr<Backend>> bad = MakeBackend("tpu");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("'tpu'"));
}

}  // namespace
}  // namespace cairn
