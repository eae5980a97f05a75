#include "worker/trainer/mlp.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<Mlp>> Mlp::Create(Backend* backend, std::vector<int> layers,
                                                 int max_batch) {
  if (layers.size() < 2 || std::any_of(layers.begin(), layers.end(), [](int n) { return n < 1; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlp: layer sizes must be at least two positive numbers, got [",
                     absl::StrJoin(layers, ", "), "]"));
  }
  if (max_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("mlp: max_batch must be >= 1, got ", max_batch));
  }
  std::unique_ptr<Mlp> mlp(new Mlp(backend, std::move(layers), max_batch));
  RETURN_IF_ERROR(mlp->AllocateBuffers());
  return mlp;
}

Mlp::Mlp(Backend* backend, std::vector<int> layers, int max_batch)
    : backend_(backend), layers_(std::move(layers)), max_batch_(max_batch) {
  for (size_t l = 0; l + 1 < layers_.size(); ++l) {
    const int64_t in = layers_[l], out = layers_[l + 1];
    MlpTensor weight{static_cast<int>(l), false, {out, in}, num_params_, size_t(out * in)};
    num_params_ += weight.size;
    MlpTensor bias{static_cast<int>(l), true, {out}, num_params_, size_t(out)};
    num_params_ += bias.size;
    tensors_.push_back(std::move(weight));
    tensors_.push_back(std::move(bias));
  }
}

absl::Status Mlp::AllocateBuffers() {
  for (size_t l = 1; l < layers_.size(); ++l) {
    const size_t n = size_t(max_batch_) * layers_[l];
    ASSIGN_OR_RETURN(DeviceBuffer<float> act, DeviceBuffer<float>::Create(backend_, n));
    ASSIGN_OR_RETURN(DeviceBuffer<float> delta, DeviceBuffer<float>::Create(backend_, n));
    act_.push_back(std::move(act));
    delta_.push_back(std::move(delta));
  }
  if (!backend_->host_accessible()) {
    ASSIGN_OR_RETURN(params_dev_, DeviceBuffer<float>::Create(backend_, num_params_));
    ASSIGN_OR_RETURN(grads_dev_, DeviceBuffer<float>::Create(backend_, num_params_));
    ASSIGN_OR_RETURN(inputs_dev_,
                     DeviceBuffer<float>::Create(backend_, size_t(max_batch_) * num_inputs()));
    ASSIGN_OR_RETURN(labels_dev_, DeviceBuffer<int32_t>::Create(backend_, max_batch_));
  }
  return absl::OkStatus();
}

absl::StatusOr<const float*> Mlp::DeviceParams(absl::Span<const float> params) {
  if (params.size() != num_params_) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlp: params hold ", params.size(), " floats, the model has ", num_params_));
  }
  if (backend_->host_accessible()) return params.data();
  RETURN_IF_ERROR(params_dev_.CopyFrom(params));
  return params_dev_.data();
}

absl::Status Mlp::DeviceBatch(absl::Span<const float> inputs, absl::Span<const int32_t> labels,
                              const float** x, const int32_t** y) {
  if (labels.size() > static_cast<size_t>(max_batch_) ||
      inputs.size() != labels.size() * num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mlp: batch of ", labels.size(), " labels and ", inputs.size(),
        " input floats; need batch <= ", max_batch_, " and ", num_inputs(), " floats per example"));
  }
  if (backend_->host_accessible()) {
    *x = inputs.data();
    *y = labels.data();
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(inputs_dev_.CopyFrom(inputs));
  RETURN_IF_ERROR(labels_dev_.CopyFrom(labels));
  *x = inputs_dev_.data();
  *y = labels_dev_.data();
  return absl::OkStatus();
}

absl::Status Mlp::Forward(const float* params, const float* x, int64_t batch) {
  const size_t num_layers = layers_.size() - 1;
  const float* a = x;
  for (size_t l = 0; l < num_layers; ++l) {
    const int64_t in = layers_[l], out = layers_[l + 1];
    const float* w = params + tensors_[2 * l].offset;
    const float* b = params + tensors_[2 * l + 1].offset;
    float* z = act_[l].data();
    // z (batch x out) = a (batch x in) * W^T (W is out x in).
    RETURN_IF_ERROR(backend_->Gemm(Transpose::kNo, Transpose::kYes, batch, out, in, 1.0f, a, in, w,
                                   in, 0.0f, z, out));
    RETURN_IF_ERROR(backend_->BiasActivation(z, b, batch, out, /*relu=*/l + 1 < num_layers));
    a = z;
  }
  return absl::OkStatus();
}

absl::Status Mlp::Backward(const float* params, const float* x, int64_t batch, float* grads) {
  // On entry delta_.back() holds d(mean loss)/d(logits).
  for (size_t l = layers_.size() - 1; l-- > 0;) {
    const int64_t in = layers_[l], out = layers_[l + 1];
    const float* dz = delta_[l].data();
    const float* a_in = l == 0 ? x : act_[l - 1].data();
    float* dw = grads + tensors_[2 * l].offset;
    float* db = grads + tensors_[2 * l + 1].offset;
    // dW (out x in) = dz^T (out x batch) * a_in (batch x in).
    RETURN_IF_ERROR(backend_->Gemm(Transpose::kYes, Transpose::kNo, out, in, batch, 1.0f, dz, out,
                                   a_in, in, 0.0f, dw, in));
    RETURN_IF_ERROR(backend_->BiasGrad(dz, batch, out, db));
    if (l == 0) break;  // no gradient for the inputs
    // d(a_in) (batch x in) = dz (batch x out) * W (out x in), then the ReLU mask
    // of layer l-1 turns it into that layer's dz.
    const float* w = params + tensors_[2 * l].offset;
    float* da = delta_[l - 1].data();
    RETURN_IF_ERROR(backend_->Gemm(Transpose::kNo, Transpose::kNo, batch, in, out, 1.0f, dz, out, w,
                                   in, 0.0f, da, in));
    RETURN_IF_ERROR(backend_->ReluBackward(act_[l - 1].data(), da, batch * in));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Mlp::TrainStep(absl::Span<const float> params,
                                      absl::Span<const float> inputs,
                                      absl::Span<const int32_t> labels, absl::Span<float> grads) {
  if (labels.empty()) return absl::InvalidArgumentError("mlp: empty batch");
  if (grads.size() != num_params_) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlp: grads hold ", grads.size(), " floats, the model has ", num_params_));
  }
  ASSIGN_OR_RETURN(const float* p, DeviceParams(params));
  const float* x = nullptr;
  const int32_t* y = nullptr;
  RETURN_IF_ERROR(DeviceBatch(inputs, labels, &x, &y));
  const int64_t batch = static_cast<int64_t>(labels.size());
  RETURN_IF_ERROR(Forward(p, x, batch));
  ASSIGN_OR_RETURN(double loss_sum, backend_->SoftmaxCrossEntropy(
                                        act_.back().data(), y, batch, num_classes(),
                                        1.0f / static_cast<float>(batch), delta_.back().data()));
  float* g = backend_->host_accessible() ? grads.data() : grads_dev_.data();
  RETURN_IF_ERROR(Backward(p, x, batch, g));
  if (!backend_->host_accessible()) RETURN_IF_ERROR(grads_dev_.CopyTo(grads));
  return loss_sum / static_cast<double>(batch);
}

absl::StatusOr<MlpEval> Mlp::Evaluate(absl::Span<const float> params,
                                      absl::Span<const float> inputs,
                                      absl::Span<const int32_t> labels) {
  if (inputs.size() != labels.size() * num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat("mlp: ", labels.size(), " labels but ",
                                                   inputs.size(), " input floats; need ",
                                                   num_inputs(), " floats per example"));
  }
  ASSIGN_OR_RETURN(const float* p, DeviceParams(params));
  MlpEval eval;
  for (size_t first = 0; first < labels.size(); first += max_batch_) {
    const size_t n = std::min<size_t>(max_batch_, labels.size() - first);
    const float* x = nullptr;
    const int32_t* y = nullptr;
    RETURN_IF_ERROR(DeviceBatch(inputs.subspan(first * num_inputs(), n * num_inputs()),
                                labels.subspan(first, n), &x, &y));
    RETURN_IF_ERROR(Forward(p, x, static_cast<int64_t>(n)));
    ASSIGN_OR_RETURN(double loss_sum, backend_->SoftmaxCrossEntropy(act_.back().data(), y, n,
                                                                    num_classes(), 0.0f, nullptr));
    ASSIGN_OR_RETURN(int64_t correct,
                     backend_->CountCorrect(act_.back().data(), y, n, num_classes()));
    eval.loss_sum += loss_sum;
    eval.correct += correct;
    eval.count += static_cast<int64_t>(n);
  }
  return eval;
}

}  // namespace cairn
