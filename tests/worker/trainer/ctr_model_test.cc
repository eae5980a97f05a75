// The ctr model's batch layout, its gradients against a double-precision
// reference written from the definition (logistic regression when the head
// has no hidden layer), ROC AUC on cases with known answers, and the local
// sparse rows' admission.
#include "worker/trainer/ctr_model.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/initializer.h"
#include "kernels/cpu_backend.h"
#include "tests/worker/trainer/synthetic_criteo.h"
#include "worker/trainer/ctr_store.h"

namespace cairn {
namespace {

constexpr int kFields = kCtrFieldCount;
constexpr int kIntegers = kCriteoIntegerFeatures;

TEST_CASE("GatherCtrBatch: distinct ascending ids per field and each example's slot",
          "[worker][ctr]") {
  const CriteoData d = SyntheticCriteo(10, 4, 1);
  const std::vector<int32_t> examples = {9, 2, 2, 5};
  CtrBatch b;
  GatherCtrBatch(d, examples, &b);
  REQUIRE(b.size == 4);
  REQUIRE(b.keys.size() == kFields);
  for (int f = 0; f < kFields; ++f) {
    CHECK(std::is_sorted(b.keys[f].begin(), b.keys[f].end()));
    CHECK(std::adjacent_find(b.keys[f].begin(), b.keys[f].end()) == b.keys[f].end());
    for (size_t i = 0; i < examples.size(); ++i) {
      CHECK(b.keys[f][b.slot[i * kFields + f]] == d.ids[examples[i] * kFields + f]);
    }
  }
  for (size_t i = 0; i < examples.size(); ++i) {
    CHECK(b.labels[i] == static_cast<int32_t>(d.labels[examples[i]]));
    for (int j = 0; j < kIntegers; ++j) {
      const size_t at = examples[i] * kIntegers + j;
      const double want = d.integer_present[at] != 0 && d.integers[at] > 0
                              ? std::log1p(static_cast<double>(d.integers[at]))
                              : 0.0;
      CHECK(b.integers[i * kIntegers + j] == Approx(want));
    }
  }
}

TEST_CASE("ctr gradients with a linear head are those of logistic regression",
          "[worker][ctr]") {
  const int width = 2;
  const int inputs = kFields * width + kIntegers;
  CpuBackend backend;
  auto model = CtrModel::Create(&backend, {inputs, 1}, width, 16);
  REQUIRE(model.ok());
  const CriteoData d = SyntheticCriteo(12, 5, 2);
  std::vector<int32_t> examples(12);
  for (int i = 0; i < 12; ++i) examples[i] = i;
  CtrBatch b;
  GatherCtrBatch(d, examples, &b);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> head((*model)->head().num_params());
  for (float& v : head) v = u(rng);
  FieldRows rows(kFields);
  for (int f = 0; f < kFields; ++f) {
    rows[f].resize(b.keys[f].size() * width);
    for (float& v : rows[f]) v = u(rng);
  }
  std::vector<float> head_grads(head.size());
  FieldRows row_grads;
  const float scale = 0.5f;
  auto loss = (*model)->TrainStep(b, head, rows, absl::MakeSpan(head_grads), &row_grads, scale);
  REQUIRE(loss.ok());

  // Reference: z = bias + sum_k w_k x_k over the concatenated input.
  std::vector<double> want_head(head.size(), 0.0);
  std::vector<std::vector<double>> row_acc(kFields);
  for (int f = 0; f < kFields; ++f) row_acc[f].assign(rows[f].size(), 0.0);
  double want_loss = 0;
  std::vector<double> want_p(b.size);
  for (int i = 0; i < b.size; ++i) {
    std::vector<double> x(inputs);
    for (int f = 0; f < kFields; ++f) {
      for (int k = 0; k < width; ++k) x[f * width + k] = rows[f][b.slot[i * kFields + f] * width + k];
    }
    for (int j = 0; j < kIntegers; ++j) x[kFields * width + j] = b.integers[i * kIntegers + j];
    double z = head[inputs];  // bias after the weight
    for (int k = 0; k < inputs; ++k) z += head[k] * x[k];
    const double y = b.labels[i];
    const double p = 1 / (1 + std::exp(-z));
    want_p[i] = p;
    want_loss += -(y * std::log(p) + (1 - y) * std::log(1 - p));
    const double dz = (p - y) / static_cast<double>(b.size);
    for (int k = 0; k < inputs; ++k) want_head[k] += dz * x[k];
    want_head[inputs] += dz;
    for (int f = 0; f < kFields; ++f) {
      for (int k = 0; k < width; ++k) {
        row_acc[f][b.slot[i * kFields + f] * width + k] += scale * dz * head[f * width + k];
      }
    }
  }
  CHECK(*loss == Approx(want_loss / static_cast<double>(b.size)).epsilon(1e-5));
  for (size_t k = 0; k < head.size(); ++k) {
    INFO("head element " << k);
    CHECK(head_grads[k] == Approx(want_head[k]).margin(1e-6));
  }
  REQUIRE(row_grads.size() == kFields);
  for (int f = 0; f < kFields; ++f) {
    REQUIRE(row_grads[f].size() == rows[f].size());
    for (size_t k = 0; k < rows[f].size(); ++k) {
      INFO("field " << f << " element " << k);
      CHECK(row_grads[f][k] == Approx(row_acc[f][k]).margin(1e-6));
    }
  }

  // Predict gives the same probabilities as the reference forward pass.
  std::vector<float> probs(b.size);
  REQUIRE((*model)->Predict(b, head, rows, absl::MakeSpan(probs)).ok());
  for (int i = 0; i < b.size; ++i) CHECK(probs[i] == Approx(want_p[i]).epsilon(1e-5));

  // Rows that do not match the batch's keys are refused, naming the table.
  FieldRows short_rows = rows;
  short_rows[6].pop_back();
  auto refused =
      (*model)->TrainStep(b, head, short_rows, absl::MakeSpan(head_grads), &row_grads, 1.0f);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("ctr.c7"));
}

TEST_CASE("CtrModel::Create refuses a head that does not fit the fields", "[worker][ctr]") {
  CpuBackend backend;
  auto wrong = CtrModel::Create(&backend, {100, 8, 1}, 4, 8);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(std::string(wrong.status().message()), Catch::Contains("117"));
  CHECK_FALSE(CtrModel::Create(&backend, {117, 8, 2}, 4, 8).ok());
}

TEST_CASE("RocAuc on cases with known answers", "[worker][ctr]") {
  CHECK(RocAuc(std::vector<float>{0.1f, 0.2f, 0.8f, 0.9f}, std::vector<int32_t>{0, 0, 1, 1}) == 1.0);
  CHECK(RocAuc(std::vector<float>{0.9f, 0.8f, 0.2f, 0.1f}, std::vector<int32_t>{0, 0, 1, 1}) == 0.0);
  CHECK(RocAuc(std::vector<float>{0.5f, 0.5f, 0.5f}, std::vector<int32_t>{0, 1, 1}) == 0.5);
  // Positives at 0.4 and 0.8 against negatives 0.1, 0.5: 3 of 4 pairs won.
  CHECK(RocAuc(std::vector<float>{0.1f, 0.4f, 0.5f, 0.8f}, std::vector<int32_t>{0, 1, 0, 1}) ==
        0.75);
  CHECK(RocAuc(std::vector<float>{0.1f, 0.4f}, std::vector<int32_t>{1, 1}) == -1.0);
}

TEST_CASE("LocalSparseRows admits an id at its min_count-th push, as a server does",
          "[worker][ctr]") {
  v1::TableSpec spec;
  spec.set_name("ctr.c1");
  spec.set_kind(v1::TABLE_KIND_SPARSE);
  spec.set_width(2);
  spec.set_min_count(3);
  spec.mutable_init()->set_kind(v1::INIT_KIND_NORMAL);
  spec.mutable_init()->set_scale(0.1f);
  spec.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  spec.mutable_optimizer()->set_learning_rate(1.0f);
  auto rows = LocalSparseRows::Create(spec);
  REQUIRE(rows.ok());
  const std::vector<Key> keys = {42};
  std::vector<float> init(2), now(2);
  InitSparseRow(spec, 42, absl::MakeSpan(init));
  const std::vector<float> grad = {1.0f, -1.0f};
  for (int push = 1; push <= 2; ++push) {
    rows->Apply(keys, grad);
    rows->Read(keys, absl::MakeSpan(now));
    CHECK(now == init);  // counted, not stored
    CHECK(rows->rows() == 0);
  }
  rows->Apply(keys, grad);
  rows->Read(keys, absl::MakeSpan(now));
  CHECK(rows->rows() == 1);
  CHECK(now[0] == init[0] - 1.0f);
  CHECK(now[1] == init[1] + 1.0f);
}

}  // namespace
}  // namespace cairn
