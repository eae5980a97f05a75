#include "worker/trainer/mlp.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<Mlp>> Mlp::Create(Backend* backend, std::vector<int> layers,
                                                 int max_batch, MlpLoss loss) {
  if (layers.size() < 2 || std::any_of(layers.begin(), layers.end(), [](int n) { return n < 1; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlp: layer sizes must be at least two positive numbers, got [",
                     absl::StrJoin(layers, ", "), "]"));
  }
  if (max_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("mlp: max_batch must be >= 1, got ", max_batch));
  }
  if (loss == MlpLoss::kSigmoidCrossEntropy && layers.back() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mlp: a sigmoid cross-entropy head has 1 output, got ", layers.back()));
  }
  std::unique_ptr<Mlp> mlp(new Mlp(backend, std::move(layers), max_batch, loss));
  RETURN_IF_ERROR(mlp->AllocateBuffers());
  return mlp;
}

Mlp::Mlp(Backend* backend, std::vector<int> layers, int max_batch, MlpLoss loss)
    : backend_(backend), layers_(std::move(layers)), max_batch_(max_batch), loss_(loss) {
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
    ASSIGN_OR_RETURN(input_grads_dev_,
                     DeviceBuffer<float>::Create(backend_, size_t(max_batch_) * num_inputs()));
    if (loss_ == MlpLoss::kSigmoidCrossEntropy) {
      host_logits_.resize(max_batch_);
      host_delta_.resize(max_batch_);
    }
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

int64_t Mlp::FirstBlockBegin(int64_t out, int b) {
  static constexpr int64_t kBegins[kFirstWeightBlocks] = {18, 9, 3, 0};  // in 32nds
  return out * kBegins[b] / 32;
}

absl::Status Mlp::FirstWeightRows(const float* x, int64_t batch, float* dw, int64_t r0,
                                  int64_t r1) {
  const int64_t in = layers_[0], out = layers_[1];
  // Rows r0..r1 of dW (out x in) = dz[:, r0..r1]^T * x.
  return backend_->Gemm(Transpose::kYes, Transpose::kNo, r1 - r0, in, batch, 1.0f,
                        delta_[0].data() + r0, out, x, in, 0.0f, dw + r0 * in, in);
}

absl::Status Mlp::Backward(const float* params, const float* x, int64_t batch, float* grads,
                           float* input_grads, bool first_weights_later) {
  // On entry delta_.back() holds d(mean loss)/d(logits).
  for (size_t l = layers_.size() - 1; l-- > 0;) {
    const int64_t in = layers_[l], out = layers_[l + 1];
    const float* dz = delta_[l].data();
    const float* a_in = l == 0 ? x : act_[l - 1].data();
    float* dw = grads + tensors_[2 * l].offset;
    float* db = grads + tensors_[2 * l + 1].offset;
    // dW (out x in) = dz^T (out x batch) * a_in (batch x in); the first
    // layer's in blocks of rows (kFirstWeightBlocks), now or later.
    if (l == 0 && first_weights_later) {
      first_inputs_ = a_in;
      first_batch_ = batch;
      first_weight_grads_ = dw;
    } else if (l == 0) {
      for (int b = 0; b < kFirstWeightBlocks; ++b) {
        RETURN_IF_ERROR(FirstWeightRows(a_in, batch, dw, FirstBlockBegin(out, b),
                                        b == 0 ? out : FirstBlockBegin(out, b - 1)));
      }
    } else {
      RETURN_IF_ERROR(backend_->Gemm(Transpose::kYes, Transpose::kNo, out, in, batch, 1.0f, dz,
                                     out, a_in, in, 0.0f, dw, in));
    }
    RETURN_IF_ERROR(backend_->BiasGrad(dz, batch, out, db));
    const float* w = params + tensors_[2 * l].offset;
    if (l == 0) {
      if (input_grads == nullptr) break;
      // d(x) (batch x in) = dz (batch x out) * W (out x in); no activation below.
      return backend_->Gemm(Transpose::kNo, Transpose::kNo, batch, in, out, 1.0f, dz, out, w, in,
                            0.0f, input_grads, in);
    }
    // d(a_in) (batch x in) = dz (batch x out) * W (out x in), then the ReLU mask
    // of layer l-1 turns it into that layer's dz.
    float* da = delta_[l - 1].data();
    RETURN_IF_ERROR(backend_->Gemm(Transpose::kNo, Transpose::kNo, batch, in, out, 1.0f, dz, out, w,
                                   in, 0.0f, da, in));
    RETURN_IF_ERROR(backend_->ReluBackward(act_[l - 1].data(), da, batch * in));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Mlp::SigmoidLoss(absl::Span<const int32_t> labels, float scale) {
  const int64_t batch = static_cast<int64_t>(labels.size());
  const float* z = act_.back().data();
  float* dz = delta_.back().data();
  if (!backend_->host_accessible()) {
    RETURN_IF_ERROR(backend_->CopyToHost(host_logits_.data(), z, batch * sizeof(float)));
    z = host_logits_.data();
    dz = host_delta_.data();
  }
  double loss_sum = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t y = labels[i];
    if (y != 0 && y != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("mlp: label ", y, " of example ", i, " is not 0 or 1"));
    }
    const double zi = z[i];
    loss_sum += std::max(zi, 0.0) - zi * y + std::log1p(std::exp(-std::abs(zi)));
    if (scale != 0.0f) {
      const double p = 1.0 / (1.0 + std::exp(-zi));
      dz[i] = static_cast<float>((p - y) * scale);
    }
  }
  if (scale != 0.0f && !backend_->host_accessible()) {
    RETURN_IF_ERROR(backend_->CopyToDevice(delta_.back().data(), dz, batch * sizeof(float)));
  }
  return loss_sum;
}

absl::StatusOr<double> Mlp::TrainStep(absl::Span<const float> params,
                                      absl::Span<const float> inputs,
                                      absl::Span<const int32_t> labels, absl::Span<float> grads,
                                      absl::Span<float> input_grads) {
  first_pending_ = false;
  return Step(params, inputs, labels, grads, input_grads, false);
}

absl::StatusOr<double> Mlp::TrainStepFirstWeightsLater(absl::Span<const float> params,
                                                       absl::Span<const float> inputs,
                                                       absl::Span<const int32_t> labels,
                                                       absl::Span<float> grads) {
  first_pending_ = false;
  first_weight_grads_ = nullptr;
  // On a device the gradient is copied to the host whole, at the end.
  ASSIGN_OR_RETURN(double loss,
                   Step(params, inputs, labels, grads, {}, backend_->host_accessible()));
  first_pending_ = true;
  return loss;
}

absl::Status Mlp::WriteFirstWeights(absl::FunctionRef<void(uint64_t bytes)> written) {
  if (!std::exchange(first_pending_, false)) {
    return absl::FailedPreconditionError("mlp: no step's first weight gradient left to write");
  }
  const int64_t in = layers_[0], out = layers_[1];
  float* dw = std::exchange(first_weight_grads_, nullptr);
  if (dw == nullptr) {  // written by the step (a device backend)
    written(num_params_ * sizeof(float));
    return absl::OkStatus();
  }
  for (int b = 0; b < kFirstWeightBlocks; ++b) {
    const int64_t r0 = FirstBlockBegin(out, b);
    RETURN_IF_ERROR(FirstWeightRows(first_inputs_, first_batch_, dw, r0,
                                    b == 0 ? out : FirstBlockBegin(out, b - 1)));
    written((num_params_ - static_cast<uint64_t>(r0 * in)) * sizeof(float));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Mlp::Step(absl::Span<const float> params, absl::Span<const float> inputs,
                                 absl::Span<const int32_t> labels, absl::Span<float> grads,
                                 absl::Span<float> input_grads, bool first_weights_later) {
  if (labels.empty()) return absl::InvalidArgumentError("mlp: empty batch");
  if (grads.size() != num_params_) {
    return absl::InvalidArgumentError(
        absl::StrCat("mlp: grads hold ", grads.size(), " floats, the model has ", num_params_));
  }
  if (!input_grads.empty() && input_grads.size() != labels.size() * num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat("mlp: input_grads hold ", input_grads.size(),
                                                   " floats; a batch of ", labels.size(),
                                                   " needs ", labels.size() * num_inputs()));
  }
  ASSIGN_OR_RETURN(const float* p, DeviceParams(params));
  const float* x = nullptr;
  const int32_t* y = nullptr;
  RETURN_IF_ERROR(DeviceBatch(inputs, labels, &x, &y));
  const int64_t batch = static_cast<int64_t>(labels.size());
  RETURN_IF_ERROR(Forward(p, x, batch));
  const float scale = 1.0f / static_cast<float>(batch);
  double loss_sum = 0;
  if (loss_ == MlpLoss::kSigmoidCrossEntropy) {
    ASSIGN_OR_RETURN(loss_sum, SigmoidLoss(labels, scale));
  } else {
    ASSIGN_OR_RETURN(loss_sum, backend_->SoftmaxCrossEntropy(act_.back().data(), y, batch,
                                                             num_classes(), scale,
                                                             delta_.back().data()));
  }
  const bool host = backend_->host_accessible();
  float* g = host ? grads.data() : grads_dev_.data();
  float* dx = input_grads.empty() ? nullptr : host ? input_grads.data() : input_grads_dev_.data();
  RETURN_IF_ERROR(Backward(p, x, batch, g, dx, first_weights_later));
  if (!host) {
    RETURN_IF_ERROR(grads_dev_.CopyTo(grads));
    if (dx != nullptr) {
      RETURN_IF_ERROR(backend_->CopyToHost(input_grads.data(), dx,
                                           input_grads.size() * sizeof(float)));
    }
  }
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
    double loss_sum = 0;
    int64_t correct = 0;
    if (loss_ == MlpLoss::kSigmoidCrossEntropy) {
      ASSIGN_OR_RETURN(loss_sum, SigmoidLoss(labels.subspan(first, n), 0.0f));
      const float* z = backend_->host_accessible() ? act_.back().data() : host_logits_.data();
      for (size_t i = 0; i < n; ++i) correct += (z[i] > 0) == (labels[first + i] == 1);
    } else {
      ASSIGN_OR_RETURN(loss_sum, backend_->SoftmaxCrossEntropy(act_.back().data(), y, n,
                                                               num_classes(), 0.0f, nullptr));
      ASSIGN_OR_RETURN(correct, backend_->CountCorrect(act_.back().data(), y, n, num_classes()));
    }
    eval.loss_sum += loss_sum;
    eval.correct += correct;
    eval.count += static_cast<int64_t>(n);
  }
  return eval;
}

absl::Status Mlp::Logits(absl::Span<const float> params, absl::Span<const float> inputs,
                         absl::Span<float> logits) {
  const size_t examples = inputs.size() / num_inputs();
  if (inputs.size() != examples * num_inputs() || logits.size() != examples * num_classes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mlp: ", inputs.size(), " input floats and room for ", logits.size(),
        " logits; need ", num_inputs(), " floats and ", num_classes(), " logits per example"));
  }
  ASSIGN_OR_RETURN(const float* p, DeviceParams(params));
  for (size_t first = 0; first < examples; first += max_batch_) {
    const size_t n = std::min<size_t>(max_batch_, examples - first);
    absl::Span<const float> chunk = inputs.subspan(first * num_inputs(), n * num_inputs());
    const float* x = chunk.data();
    if (!backend_->host_accessible()) {
      RETURN_IF_ERROR(inputs_dev_.CopyFrom(chunk));
      x = inputs_dev_.data();
    }
    RETURN_IF_ERROR(Forward(p, x, static_cast<int64_t>(n)));
    RETURN_IF_ERROR(backend_->CopyToHost(logits.data() + first * num_classes(), act_.back().data(),
                                         n * num_classes() * sizeof(float)));
  }
  return absl::OkStatus();
}

}  // namespace cairn
