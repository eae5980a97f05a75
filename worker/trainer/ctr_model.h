// The click-through-rate model of `training.model: ctr`: an embedding row
// per categorical id (one sparse table per field, "ctr.c1" .. "ctr.c26"),
// the rows of an example's 26 fields concatenated with its 13 integer
// features (each as log(1 + max(x, 0)), 0 when missing), into an MLP head
// with one output, the click logit, under a sigmoid cross-entropy loss. This
// is the embedding-plus-MLP shape of the models parameter servers train for
// recommendation and advertising (e.g. Covington et al., "Deep Neural
// Networks for YouTube Recommendations", 2016; Cheng et al., "Wide & Deep
// Learning for Recommender Systems", 2016).
//
// A batch is prepared once (CtrBatch): per field the ids it uses, each once
// and ascending, so a step pulls and pushes each row once; the gradient of
// a row is the sum over the batch's examples that use it.
//
// Not thread-safe; confined to its Backend's thread, as the Mlp.
#ifndef CAIRN_WORKER_TRAINER_CTR_MODEL_H_
#define CAIRN_WORKER_TRAINER_CTR_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/bytes.h"
#include "worker/trainer/criteo_reader.h"
#include "worker/trainer/mlp.h"

namespace cairn {

inline constexpr int kCtrFieldCount = kCriteoCategoricalFeatures;

// One batch of examples, laid out for a step.
struct CtrBatch {
  int64_t size = 0;
  // [field]: the distinct ids of the batch in that field, ascending.
  std::vector<std::vector<Key>> keys;
  // size x 26: example i's field f uses row slot[i * 26 + f] of keys[f].
  std::vector<uint32_t> slot;
  std::vector<float> integers;  // size x 13, transformed as the header says
  std::vector<int32_t> labels;  // size; 0 or 1
};

// Fills `batch` with data's examples `examples` (indices into data), in
// that order. Reuses batch's memory.
void GatherCtrBatch(const CriteoData& data, absl::Span<const int32_t> examples, CtrBatch* batch);

// The rows of a batch's ids, or their gradients: [field] keys[field].size()
// x width floats, row j for keys[field][j].
using FieldRows = std::vector<std::vector<float>>;

class CtrModel {
 public:
  // head_layers: the head's sizes, from 26 * width + 13 inputs to 1 output.
  // max_batch: the most examples one TrainStep or Predict chunk takes.
  // InvalidArgument on sizes that do not fit; the Backend's errors.
  static absl::StatusOr<std::unique_ptr<CtrModel>> Create(Backend* backend,
                                                          std::vector<int> head_layers, int width,
                                                          int max_batch);

  Mlp& head() { return *head_; }
  const Mlp& head() const { return *head_; }
  int width() const { return width_; }
  int max_batch() const { return head_->max_batch(); }

  // One forward and backward pass on `batch` (size <= max_batch):
  //   head: the head's parameters (Mlp flat layout); rows: the batch's rows;
  //   head_grads: head().num_params() floats, d(mean loss)/d(head);
  //   row_grads: resized like rows, row_scale * d(mean loss)/d(row), summed
  //   over the examples that use the row.
  // Returns the batch's mean loss. InvalidArgument naming the field when
  // rows do not match the batch's keys.
  absl::StatusOr<double> TrainStep(const CtrBatch& batch, absl::Span<const float> head,
                                   const FieldRows& rows, absl::Span<float> head_grads,
                                   FieldRows* row_grads, float row_scale);

  // Click probabilities of the batch's examples (any size) into `probs`
  // (batch.size floats).
  absl::Status Predict(const CtrBatch& batch, absl::Span<const float> head,
                       const FieldRows& rows, absl::Span<float> probs);

 private:
  CtrModel(std::unique_ptr<Mlp> head, int width) : head_(std::move(head)), width_(width) {}
  // The head's inputs of examples [first, first + n) into inputs_.
  absl::Status Assemble(const CtrBatch& batch, const FieldRows& rows, int64_t first, int64_t n);

  std::unique_ptr<Mlp> head_;
  const int width_;
  std::vector<float> inputs_;       // max_batch x head inputs
  std::vector<float> input_grads_;  // max_batch x head inputs
  std::vector<float> logits_;
};

// The area under the ROC curve of `scores` against 0/1 `labels`: the
// probability that a random positive scores above a random negative, ties
// counting half (the Mann-Whitney U statistic over n_pos * n_neg). -1 when
// either class is absent. Thread-safe.
double RocAuc(absl::Span<const float> scores, absl::Span<const int32_t> labels);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_CTR_MODEL_H_
