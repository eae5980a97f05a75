#include "server/optimizer/optimizer.h"

#include <cmath>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cairn/v1/types.pb.h"
#include "common/status_macros.h"
#include "server/optimizer/adagrad.h"
#include "server/optimizer/adam.h"
#include "server/optimizer/sgd.h"

namespace cairn {
namespace {

// Each check is written so that NaN fails it.

absl::Status Bad(absl::string_view kind, absl::string_view field,
                 absl::string_view rule, float value) {
  return absl::InvalidArgumentError(absl::StrCat(
      kind, " optimizer: ", field, " must be ", rule, ", got ", value));
}

absl::Status CheckPositive(absl::string_view kind, absl::string_view field,
                           float value) {
  if (value > 0.0f && std::isfinite(value)) return absl::OkStatus();
  return Bad(kind, field, "> 0 and finite", value);
}

absl::Status CheckNonNegative(absl::string_view kind, absl::string_view field,
                              float value) {
  if (value >= 0.0f && std::isfinite(value)) return absl::OkStatus();
  return Bad(kind, field, ">= 0 and finite", value);
}

absl::Status CheckUnitInterval(absl::string_view kind, absl::string_view field,
                               float value) {
  if (value >= 0.0f && value < 1.0f) return absl::OkStatus();
  return Bad(kind, field, "in [0, 1)", value);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeSgd(const v1::OptimizerSpec& spec) {
  constexpr absl::string_view kKind = "sgd";
  const SgdOptions options{.learning_rate = spec.learning_rate(),
                           .momentum = spec.momentum(),
                           .nesterov = spec.nesterov(),
                           .weight_decay = spec.weight_decay()};
  RETURN_IF_ERROR(CheckPositive(kKind, "learning_rate", options.learning_rate));
  RETURN_IF_ERROR(CheckUnitInterval(kKind, "momentum", options.momentum));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "weight_decay", options.weight_decay));
  if (options.nesterov && options.momentum == 0.0f) {
    return absl::InvalidArgumentError(
        "sgd optimizer: nesterov needs momentum > 0, got momentum 0");
  }
  return std::make_unique<SgdOptimizer>(options);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeAdagrad(
    const v1::OptimizerSpec& spec) {
  constexpr absl::string_view kKind = "adagrad";
  const AdagradOptions options{
      .learning_rate = spec.learning_rate(),
      .epsilon = spec.epsilon(),
      .initial_accumulator = spec.initial_accumulator(),
      .weight_decay = spec.weight_decay()};
  RETURN_IF_ERROR(CheckPositive(kKind, "learning_rate", options.learning_rate));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "epsilon", options.epsilon));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "initial_accumulator",
                                   options.initial_accumulator));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "weight_decay", options.weight_decay));
  return std::make_unique<AdagradOptimizer>(options);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeAdam(const v1::OptimizerSpec& spec) {
  constexpr absl::string_view kKind = "adam";
  const AdamOptions options{.learning_rate = spec.learning_rate(),
                            .beta1 = spec.beta1(),
                            .beta2 = spec.beta2(),
                            .epsilon = spec.epsilon(),
                            .weight_decay = spec.weight_decay()};
  RETURN_IF_ERROR(CheckPositive(kKind, "learning_rate", options.learning_rate));
  RETURN_IF_ERROR(CheckUnitInterval(kKind, "beta1", options.beta1));
  RETURN_IF_ERROR(CheckUnitInterval(kKind, "beta2", options.beta2));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "epsilon", options.epsilon));
  RETURN_IF_ERROR(CheckNonNegative(kKind, "weight_decay", options.weight_decay));
  return std::make_unique<AdamOptimizer>(options);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(
    const v1::OptimizerSpec& spec) {
  switch (spec.kind()) {
    case v1::OPTIMIZER_KIND_SGD:
      return MakeSgd(spec);
    case v1::OPTIMIZER_KIND_ADAGRAD:
      return MakeAdagrad(spec);
    case v1::OPTIMIZER_KIND_ADAM:
      return MakeAdam(spec);
    case v1::OPTIMIZER_KIND_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "optimizer: kind is unspecified (expected sgd, adagrad or adam)");
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "optimizer: kind ", static_cast<int>(spec.kind()),
      " is not known (expected sgd, adagrad or adam)"));
}

}  // namespace cairn
