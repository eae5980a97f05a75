#include "worker/trainer/ctr_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace cairn {
namespace {

constexpr int kFields = kCtrFieldCount;
constexpr int kIntegers = kCriteoIntegerFeatures;

float TransformInteger(int64_t x, uint8_t present) {
  return present != 0 && x > 0 ? static_cast<float>(std::log1p(static_cast<double>(x))) : 0.0f;
}

}  // namespace

void GatherCtrBatch(const CriteoData& data, absl::Span<const int32_t> examples, CtrBatch* batch) {
  const size_t n = examples.size();
  batch->size = static_cast<int64_t>(n);
  batch->keys.resize(kFields);
  batch->slot.resize(n * kFields);
  batch->integers.resize(n * kIntegers);
  batch->labels.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t e = static_cast<size_t>(examples[i]);
    batch->labels[i] = data.labels[e] != 0.0f ? 1 : 0;
    for (int j = 0; j < kIntegers; ++j) {
      batch->integers[i * kIntegers + j] =
          TransformInteger(data.integers[e * kIntegers + j], data.integer_present[e * kIntegers + j]);
    }
  }
  // Per field: sort (id, example) pairs, give each distinct id a slot.
  std::vector<std::pair<Key, uint32_t>> by_id(n);
  for (int f = 0; f < kFields; ++f) {
    for (size_t i = 0; i < n; ++i) {
      const size_t e = static_cast<size_t>(examples[i]);
      by_id[i] = {data.ids[e * kFields + f], static_cast<uint32_t>(i)};
    }
    std::sort(by_id.begin(), by_id.end());
    std::vector<Key>& keys = batch->keys[f];
    keys.clear();
    for (const auto& [id, example] : by_id) {
      if (keys.empty() || keys.back() != id) keys.push_back(id);
      batch->slot[example * kFields + f] = static_cast<uint32_t>(keys.size() - 1);
    }
  }
}

absl::StatusOr<std::unique_ptr<CtrModel>> CtrModel::Create(Backend* backend,
                                                          std::vector<int> head_layers, int width,
                                                          int max_batch) {
  if (width < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ctr: embedding width must be >= 1, got ",
                                                   width));
  }
  const int inputs = kFields * width + kIntegers;
  if (head_layers.empty() || head_layers.front() != inputs || head_layers.back() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctr: the head must take ", inputs, " inputs (26 x width ", width,
                     " + 13) and give 1 output"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Mlp> head,
                   Mlp::Create(backend, std::move(head_layers), max_batch,
                               MlpLoss::kSigmoidCrossEntropy));
  std::unique_ptr<CtrModel> model(new CtrModel(std::move(head), width));
  model->inputs_.resize(static_cast<size_t>(max_batch) * inputs);
  model->input_grads_.resize(static_cast<size_t>(max_batch) * inputs);
  model->logits_.resize(static_cast<size_t>(max_batch));
  return model;
}

absl::Status CtrModel::Assemble(const CtrBatch& batch, const FieldRows& rows, int64_t first,
                                int64_t n) {
  if (rows.size() != kFields) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctr: rows of ", rows.size(), " fields; the model has ", kFields));
  }
  for (int f = 0; f < kFields; ++f) {
    if (rows[f].size() != batch.keys[f].size() * width_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ctr: table ctr.c", f + 1, ": ", rows[f].size(), " floats of rows for ",
          batch.keys[f].size(), " ids of width ", width_));
    }
  }
  const size_t in = static_cast<size_t>(head_->num_inputs());
  for (int64_t i = 0; i < n; ++i) {
    const size_t e = static_cast<size_t>(first + i);
    float* x = inputs_.data() + static_cast<size_t>(i) * in;
    for (int f = 0; f < kFields; ++f) {
      std::memcpy(x + static_cast<size_t>(f) * width_,
                  rows[f].data() + static_cast<size_t>(batch.slot[e * kFields + f]) * width_,
                  width_ * sizeof(float));
    }
    std::memcpy(x + static_cast<size_t>(kFields) * width_,
                batch.integers.data() + e * kIntegers, kIntegers * sizeof(float));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CtrModel::TrainStep(const CtrBatch& batch, absl::Span<const float> head,
                                           const FieldRows& rows, absl::Span<float> head_grads,
                                           FieldRows* row_grads, float row_scale) {
  if (batch.size < 1 || batch.size > max_batch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctr: batch of ", batch.size, " outside [1, ", max_batch(), "]"));
  }
  RETURN_IF_ERROR(Assemble(batch, rows, 0, batch.size));
  const size_t in = static_cast<size_t>(head_->num_inputs());
  const size_t used = static_cast<size_t>(batch.size) * in;
  ASSIGN_OR_RETURN(double loss,
                   head_->TrainStep(head, absl::MakeConstSpan(inputs_.data(), used), batch.labels,
                                    head_grads, absl::MakeSpan(input_grads_.data(), used)));
  row_grads->resize(kFields);
  for (int f = 0; f < kFields; ++f) {
    std::vector<float>& g = (*row_grads)[f];
    g.assign(batch.keys[f].size() * width_, 0.0f);
    for (int64_t i = 0; i < batch.size; ++i) {
      const float* dx = input_grads_.data() + static_cast<size_t>(i) * in +
                        static_cast<size_t>(f) * width_;
      float* row = g.data() + static_cast<size_t>(batch.slot[i * kFields + f]) * width_;
      for (int k = 0; k < width_; ++k) row[k] += dx[k];
    }
    if (row_scale != 1.0f) {
      for (float& v : g) v *= row_scale;
    }
  }
  return loss;
}

absl::Status CtrModel::Predict(const CtrBatch& batch, absl::Span<const float> head,
                               const FieldRows& rows, absl::Span<float> probs) {
  if (probs.size() != static_cast<size_t>(batch.size)) {
    return absl::InvalidArgumentError(absl::StrCat("ctr: room for ", probs.size(),
                                                   " probabilities, the batch has ", batch.size));
  }
  const size_t in = static_cast<size_t>(head_->num_inputs());
  for (int64_t first = 0; first < batch.size; first += max_batch()) {
    const int64_t n = std::min<int64_t>(max_batch(), batch.size - first);
    RETURN_IF_ERROR(Assemble(batch, rows, first, n));
    RETURN_IF_ERROR(head_->Logits(head, absl::MakeConstSpan(inputs_.data(), n * in),
                                  absl::MakeSpan(logits_.data(), n)));
    for (int64_t i = 0; i < n; ++i) {
      probs[first + i] = static_cast<float>(1.0 / (1.0 + std::exp(-double{logits_[i]})));
    }
  }
  return absl::OkStatus();
}

double RocAuc(absl::Span<const float> scores, absl::Span<const int32_t> labels) {
  const size_t n = std::min(scores.size(), labels.size());
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based, ties given their mean rank).
  double positive_rank_sum = 0;
  double positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = 0.5 * static_cast<double>(i + 1 + j);
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] == 1) {
        positive_rank_sum += mean_rank;
        positives += 1;
      }
    }
    i = j;
  }
  const double negatives = static_cast<double>(n) - positives;
  if (positives == 0 || negatives == 0) return -1;
  return (positive_rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

}  // namespace cairn
