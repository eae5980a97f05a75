// Defaults shared by the parser and by code that builds configs directly, and
// the tables of the built-in models (mlp, ctr).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"

namespace cairn {

int CtrHeadInputs(int embedding_width) {
  return kCtrFields * embedding_width + kCtrIntegerFeatures;
}

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
  const bool ctr = training.model == "ctr";
  if (ctr) {
    // One sparse table per categorical field. Their gradients are summed
    // (each worker pushes its rows' share of the global batch's mean): a
    // row one worker touches is not divided by the number of workers that
    // happened to push other rows of the table.
    const EmbeddingConfig& e = training.embedding;
    for (int f = 1; f <= kCtrFields; ++f) {
      v1::TableSpec t;
      t.set_name(absl::StrCat("ctr.c", f));
      t.set_kind(v1::TABLE_KIND_SPARSE);
      t.set_width(e.width);
      *t.mutable_optimizer() = training.optimizer;
      t.mutable_init()->set_kind(v1::INIT_KIND_NORMAL);
      t.mutable_init()->set_scale(static_cast<float>(e.init_scale));
      t.mutable_init()->set_seed(training.seed);
      t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
      t.set_consistency(consistency);
      t.set_staleness(consistency == v1::CONSISTENCY_SSP ? staleness : 0);
      t.set_aggregation(v1::AGGREGATION_SUM);
      t.set_wire_dtype(training.wire_dtype);
      t.set_min_count(static_cast<uint32_t>(e.min_count));
      t.set_capacity_rows(static_cast<uint64_t>(e.capacity_rows));
      t.set_evict_to(e.capacity_rows > 0 ? e.evict_to : 0.0);
      t.set_eviction(e.eviction == "lfu" ? v1::EVICTION_POLICY_LFU : v1::EVICTION_POLICY_LRU);
      t.set_cold_tier(e.cold_tier);
      t.set_ttl_clocks(static_cast<uint64_t>(e.ttl_clocks));
      t.set_id(static_cast<uint32_t>(tables.size()));
      tables.push_back(std::move(t));
    }
  }
  const std::string prefix = ctr ? "ctr" : "mlp";
  for (size_t i = 0; i + 1 < training.layers.size(); ++i) {
    const int64_t in = training.layers[i], out = training.layers[i + 1];
    v1::InitSpec weight_init;
    weight_init.set_kind(v1::INIT_KIND_HE_UNIFORM);
    weight_init.set_seed(training.seed);
    v1::InitSpec bias_init;
    bias_init.set_kind(v1::INIT_KIND_ZEROS);
    add(absl::StrCat(prefix, ".fc", i, ".weight"), {out, in}, weight_init);
    add(absl::StrCat(prefix, ".fc", i, ".bias"), {out}, bias_init);
  }
  return tables;
}

}  // namespace cairn
