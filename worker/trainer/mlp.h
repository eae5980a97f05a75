// A multi-layer perceptron on a Backend: fully connected layers with ReLU
// between them and, on the last, a softmax cross-entropy loss (a classifier
// over layers.back() classes) or a sigmoid cross-entropy loss (one output,
// the logit of a binary label: the click-through-rate head).
//
// Layer i maps layers[i] inputs to layers[i+1] outputs: z = a W_i^T + b_i,
// with W_i of shape [out, in] row-major and b_i of shape [out] (the layout of
// the tables "mlp.fc<i>.weight" / "mlp.fc<i>.bias"). Hidden layers apply
// ReLU; the last layer's z are the logits.
//
// Parameters and gradients travel as one flat float32 vector: for each
// layer in order, its weight then its bias (tensors() gives the offsets).
// Loss: the mean over the batch of -log softmax(logits)[label], or of
// -[y log s(z) + (1 - y) log(1 - s(z))] with s the logistic function;
// gradients are of that mean. The sigmoid loss runs on the host (one float
// per example), in the stable form max(z, 0) - z y + log(1 + exp(-|z|)). Backward propagation as in Rumelhart, Hinton & Williams,
// "Learning representations by back-propagating errors" (1986).
//
// Not thread-safe; confined to its Backend's thread. Keeps device work
// buffers for max_batch examples, allocated once in Create: a step
// allocates nothing.
#ifndef CAIRN_WORKER_TRAINER_MLP_H_
#define CAIRN_WORKER_TRAINER_MLP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/backend.h"
#include "kernels/device_buffer.h"

namespace cairn {

// One parameter tensor in the flat layout.
struct MlpTensor {
  int layer = 0;
  bool is_bias = false;
  std::vector<int64_t> shape;  // weight: {out, in}; bias: {out}
  size_t offset = 0;           // in floats, into the flat vector
  size_t size = 0;             // floats
};

// Forward-only results over a set of examples.
struct MlpEval {
  double loss_sum = 0;  // sum over examples of the cross-entropy
  int64_t correct = 0;  // examples whose argmax is the label
  int64_t count = 0;    // examples seen
};

enum class MlpLoss {
  kSoftmaxCrossEntropy,  // labels in [0, layers.back())
  kSigmoidCrossEntropy,  // layers.back() == 1; labels 0 or 1
};

class Mlp {
 public:
  // layers: sizes from input to classes (at least 2 entries, each >= 1; the
  // last 1 for the sigmoid loss). max_batch: the most examples one
  // TrainStep or one Evaluate chunk takes. `backend` must outlive the Mlp.
  // InvalidArgument on bad sizes; ResourceExhausted when device memory runs
  // out.
  static absl::StatusOr<std::unique_ptr<Mlp>> Create(
      Backend* backend, std::vector<int> layers, int max_batch,
      MlpLoss loss = MlpLoss::kSoftmaxCrossEntropy);

  const std::vector<int>& layers() const { return layers_; }
  // 2 per layer: weight, bias, in layer order.
  const std::vector<MlpTensor>& tensors() const { return tensors_; }
  size_t num_params() const { return num_params_; }
  int max_batch() const { return max_batch_; }
  int64_t num_inputs() const { return layers_.front(); }
  int num_classes() const { return layers_.back(); }

  // One forward and backward pass on batch = labels.size() examples
  // (1 <= batch <= max_batch), all spans in host memory:
  //   params: num_params() floats; inputs: batch x num_inputs() floats,
  //   row-major; labels: batch ints in [0, num_classes());
  //   grads: num_params() floats, overwritten with d(mean loss)/d(params).
  //   input_grads: empty, or batch x num_inputs() floats, overwritten with
  //   d(mean loss)/d(inputs) (what an embedding layer below needs).
  // Returns the mean loss. InvalidArgument on wrong sizes or (CPU) a label
  // out of range; device errors as the Backend reports them.
  absl::StatusOr<double> TrainStep(absl::Span<const float> params, absl::Span<const float> inputs,
                                   absl::Span<const int32_t> labels, absl::Span<float> grads,
                                   absl::Span<float> input_grads = {});

  // The first layer's weight gradient, the model's largest, is computed in
  // this many blocks of its rows (outputs), from its last rows to its first,
  // in every TrainStep, so that a step whose push goes while it is written
  // (TrainStepFirstWeightsLater) computes the same bits as one that does
  // not. The blocks shrink toward the last computed (7/16, 9/32, 3/16 and
  // 3/32 of the rows, FirstBlockBegin): a server applying the push as it is
  // written has the least left once the last is (docs/benchmarks.md, "A
  // push sent while it is written").
  static constexpr int kFirstWeightBlocks = 4;
  // The row the block b (0: computed first) of the first layer's `out` rows
  // starts at; it ends where block b - 1 starts (block 0: at `out`).
  static int64_t FirstBlockBegin(int64_t out, int b);

  // TrainStep but for the first layer's weight gradient, which the next
  // WriteFirstWeights writes (everything else of `grads` is written on
  // return). On a device backend the whole step runs here and
  // WriteFirstWeights only reports it. Arguments and errors as TrainStep;
  // `grads` must stay valid until WriteFirstWeights returns.
  absl::StatusOr<double> TrainStepFirstWeightsLater(absl::Span<const float> params,
                                                    absl::Span<const float> inputs,
                                                    absl::Span<const int32_t> labels,
                                                    absl::Span<float> grads);
  // Writes the first layer's weight gradient of the last
  // TrainStepFirstWeightsLater, in kFirstWeightBlocks blocks of rows, the
  // last rows first, calling `written(bytes)` after each with the bytes of
  // that step's `grads` now in place, counted back from its end (the
  // weight gradient starts `grads`, tensor 0; the rest is written).
  // Errors: as the Backend's Gemm; FailedPrecondition without a step left
  // to finish.
  absl::Status WriteFirstWeights(absl::FunctionRef<void(uint64_t bytes)> written);

  // Forward only: the last layer's outputs (logits) of batch =
  // inputs.size() / num_inputs() examples (any number, in chunks of
  // max_batch) into `logits` (batch x num_classes() floats, host memory).
  absl::Status Logits(absl::Span<const float> params, absl::Span<const float> inputs,
                      absl::Span<float> logits);

  // Forward only, over any number of examples (in chunks of max_batch).
  // Shapes as in TrainStep.
  absl::StatusOr<MlpEval> Evaluate(absl::Span<const float> params, absl::Span<const float> inputs,
                                   absl::Span<const int32_t> labels);

 private:
  Mlp(Backend* backend, std::vector<int> layers, int max_batch, MlpLoss loss);
  absl::Status AllocateBuffers();
  // Device views of the host spans: the spans themselves on a host-accessible
  // backend, else the device copies (after copying).
  absl::StatusOr<const float*> DeviceParams(absl::Span<const float> params);
  absl::Status DeviceBatch(absl::Span<const float> inputs, absl::Span<const int32_t> labels,
                           const float** x, const int32_t** y);
  // Logits of `batch` examples in act_.back().
  absl::Status Forward(const float* params, const float* x, int64_t batch);
  // input_grads: null, or where d(loss)/d(x) goes (batch x num_inputs()).
  // `first_weights_later`: the first layer's weight gradient is left for
  // WriteFirstWeights (first_*_ record where).
  absl::Status Backward(const float* params, const float* x, int64_t batch, float* grads,
                        float* input_grads, bool first_weights_later = false);
  // Rows [r0, r1) of the first layer's weight gradient (out x in) into
  // `dw`, from inputs `x` (batch x in) and delta_[0].
  absl::Status FirstWeightRows(const float* x, int64_t batch, float* dw, int64_t r0, int64_t r1);
  // TrainStep; `first_weights_later` as for Backward.
  absl::StatusOr<double> Step(absl::Span<const float> params, absl::Span<const float> inputs,
                              absl::Span<const int32_t> labels, absl::Span<float> grads,
                              absl::Span<float> input_grads, bool first_weights_later);
  // The sigmoid loss of act_.back() against `labels` (host): returns the
  // summed loss; with `scale` != 0 writes scale * d(loss)/d(logits) into
  // delta_.back().
  absl::StatusOr<double> SigmoidLoss(absl::Span<const int32_t> labels, float scale);

  Backend* const backend_;
  const std::vector<int> layers_;
  const int max_batch_;
  const MlpLoss loss_;
  std::vector<MlpTensor> tensors_;
  size_t num_params_ = 0;

  // act_[l]: output of layer l (batch x layers[l+1]); act_.back() = logits.
  std::vector<DeviceBuffer<float>> act_;
  // delta_[l]: d(loss)/d(z of layer l), same shape as act_[l].
  std::vector<DeviceBuffer<float>> delta_;
  // Device copies of the host inputs; empty on host-accessible backends.
  DeviceBuffer<float> params_dev_;
  DeviceBuffer<float> grads_dev_;
  DeviceBuffer<float> inputs_dev_;
  DeviceBuffer<int32_t> labels_dev_;
  DeviceBuffer<float> input_grads_dev_;
  std::vector<float> host_logits_;  // sigmoid loss on a device backend
  std::vector<float> host_delta_;
  // The step TrainStepFirstWeightsLater left for WriteFirstWeights: its
  // input batch and where its first weight gradient goes (null: none).
  const float* first_inputs_ = nullptr;
  int64_t first_batch_ = 0;
  float* first_weight_grads_ = nullptr;
  bool first_pending_ = false;  // a WriteFirstWeights is due
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_MLP_H_
