#include "worker/trainer/model_tables_binding.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/initializer.h"

namespace cairn {

absl::StatusOr<std::vector<BoundTable>> BindModelTables(const Mlp& mlp,
                                                        const std::vector<v1::TableSpec>& tables) {
  const std::vector<MlpTensor>& tensors = mlp.tensors();
  if (tables.size() != tensors.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the model needs ", tensors.size(),
                                                   " tables (weight and bias per layer), got ",
                                                   tables.size()));
  }
  std::vector<BoundTable> bound;
  for (size_t i = 0; i < tables.size(); ++i) {
    const v1::TableSpec& t = tables[i];
    const MlpTensor& tensor = tensors[i];
    const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (t.kind() != v1::TABLE_KIND_DENSE || shape != tensor.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", t.name(), " (", t.kind() == v1::TABLE_KIND_DENSE ? "dense" : "not dense",
          ", shape [", absl::StrJoin(shape, ", "), "]) does not fit the model's layer ",
          tensor.layer, " ", tensor.is_bias ? "bias" : "weight", ", a dense [",
          absl::StrJoin(tensor.shape, ", "), "]"));
    }
    bound.push_back(BoundTable{t, tensor.offset, tensor.size});
  }
  return bound;
}

void InitParameters(const std::vector<BoundTable>& tables, absl::Span<float> params) {
  for (const BoundTable& t : tables) {
    InitDenseElements(t.spec, 0, params.subspan(t.offset, t.size));
  }
}

}  // namespace cairn
