// Defaults shared by the parser and by code that builds configs directly, and
// the tables of the built-in MLP model.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"

namespace cairn {

int64_t DefaultChunkSize(int64_t num_elements) {
  return std::max<int64_t>(1, std::min(kDefaultChunkSize, num_elements));
}

v1::OptimizerSpec DefaultOptimizerSpec() {
  v1::OptimizerSpec spec;
  spec.set_kind(v1::OPTIMIZER_KIND_SGD);
  spec.set_learning_rate(0.1f);
  return spec;
}

std::vector<v1::TableSpec> ModelTables(const TrainingConfig& training,
                                       v1::Consistency consistency, int64_t staleness) {
  std::vector<v1::TableSpec> tables;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, v1::InitSpec init) {
    v1::TableSpec t;
    t.set_name(name);
    t.set_kind(v1::TABLE_KIND_DENSE);
    int64_t elements = 1;
    for (int64_t d : shape) {
      t.add_shape(d);
      elements *= d;
    }
    t.set_chunk_size(DefaultChunkSize(elements));
    *t.mutable_optimizer() = training.optimizer;
    *t.mutable_init() = init;
    t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
    t.set_consistency(consistency);
    t.set_staleness(consistency == v1::CONSISTENCY_SSP ? staleness : 0);
    t.set_aggregation(v1::AGGREGATION_MEAN);
    t.set_wire_dtype(training.wire_dtype);
    t.set_id(static_cast<uint32_t>(tables.size()));
    tables.push_back(std::move(t));
  };
  for (size_t i = 0; i + 1 < training.layers.size(); ++i) {
    const int64_t in = training.layers[i], out = training.layers[i + 1];
    v1::InitSpec weight_init;
    weight_init.set_kind(v1::INIT_KIND_HE_UNIFORM);
    weight_init.set_seed(training.seed);
    v1::InitSpec bias_init;
    bias_init.set_kind(v1::INIT_KIND_ZEROS);
    add(absl::StrCat("mlp.fc", i, ".weight"), {out, in}, weight_init);
    add(absl::StrCat("mlp.fc", i, ".bias"), {out}, bias_init);
  }
  return tables;
}

}  // namespace cairn
