#include "common/config/internal/table_parser.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"
#include "common/initializer.h"
#include "common/status_macros.h"

namespace cairn::config_internal {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxElements = int64_t{1} << 40;  // per dense table

const NumberRange kPositive{0.0, true};
const NumberRange kNonNegative{0.0, false};
const NumberRange kUnitInterval{0.0, false, 1.0, true};  // [0, 1)

v1::Consistency ConsistencyFromName(const std::string& name) {
  if (name == "ssp") return v1::CONSISTENCY_SSP;
  if (name == "asp") return v1::CONSISTENCY_ASP;
  return v1::CONSISTENCY_BSP;
}

// Fails with `why` when `key` is given: it does not apply here.
absl::Status Forbid(const MapReader& r, const std::string& key, const std::string& why) {
  if (!r.Has(key)) return absl::OkStatus();
  return r.Error(key, why);
}

bool ValidTableName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<v1::InitSpec> ParseInit(const YamlNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, path, {"type", "value", "scale", "seed"}));
  std::string type;
  if (!r.Has("type")) return r.Error("type", "is required (zeros, constant, uniform, normal, he_uniform)");
  RETURN_IF_ERROR(r.Choice("type", {"zeros", "constant", "uniform", "normal", "he_uniform"}, &type));
  v1::InitSpec init;
  const std::string for_type = absl::StrCat("does not apply to init type ", type);
  if (type == "zeros") init.set_kind(v1::INIT_KIND_ZEROS);
  if (type == "constant") init.set_kind(v1::INIT_KIND_CONSTANT);
  if (type == "uniform") init.set_kind(v1::INIT_KIND_UNIFORM);
  if (type == "normal") init.set_kind(v1::INIT_KIND_NORMAL);
  if (type == "he_uniform") init.set_kind(v1::INIT_KIND_HE_UNIFORM);
  if (type == "constant") {
    if (!r.Has("value")) return r.Error("value", "is required with init type constant");
    float value = 0;
    RETURN_IF_ERROR(r.Float("value", NumberRange{}, &value));
    init.set_value(value);
  } else {
    RETURN_IF_ERROR(Forbid(r, "value", absl::StrCat(for_type, " (only to constant)")));
  }
  if (type == "uniform" || type == "normal") {
    if (!r.Has("scale")) return r.Error("scale", absl::StrCat("is required with init type ", type));
    float scale = 0;
    RETURN_IF_ERROR(r.Float("scale", kPositive, &scale));
    init.set_scale(scale);
  } else {
    RETURN_IF_ERROR(Forbid(r, "scale", absl::StrCat(for_type, " (only to uniform and normal)")));
  }
  if (type == "zeros" || type == "constant") {
    RETURN_IF_ERROR(Forbid(r, "seed", absl::StrCat(for_type, " (nothing random to seed)")));
  }
  uint64_t seed = 0;
  RETURN_IF_ERROR(r.Uint64("seed", &seed));
  init.set_seed(seed);
  return init;
}

}  // namespace

const char* ConsistencyName(v1::Consistency mode) {
  switch (mode) {
    case v1::CONSISTENCY_SSP:
      return "ssp";
    case v1::CONSISTENCY_ASP:
      return "asp";
    default:
      return "bsp";
  }
}

absl::Status ParseConsistency(const MapReader& r, const std::string& mode_key,
                              v1::Consistency inherited_mode, int64_t inherited_staleness,
                              v1::Consistency* mode, int64_t* staleness) {
  std::string name = ConsistencyName(inherited_mode);
  RETURN_IF_ERROR(r.Choice(mode_key, {"bsp", "ssp", "asp"}, &name));
  const v1::Consistency effective = ConsistencyFromName(name);
  int64_t bound = -1;
  RETURN_IF_ERROR(r.Int("staleness", 0, kMaxInt, &bound));
  if (effective == v1::CONSISTENCY_SSP) {
    if (bound < 0 && r.Has(mode_key)) {
      return r.Error("staleness", absl::StrCat("is required when `", r.Path(mode_key),
                                               "` is ssp (a non-negative integer)"));
    }
    *staleness = bound >= 0 ? bound : inherited_staleness;
  } else {
    if (bound >= 0) {
      return r.Error("staleness", absl::StrCat("only applies to ssp; the consistency here is ",
                                               name, r.Has(mode_key) ? "" : " (inherited)",
                                               ": remove it or set ssp"));
    }
    *staleness = 0;
  }
  *mode = effective;
  return absl::OkStatus();
}

absl::StatusOr<v1::OptimizerSpec> ParseOptimizer(const YamlNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(MapReader r,
                   MapReader::Open(node, path,
                                   {"type", "learning_rate", "momentum", "nesterov", "beta1",
                                    "beta2", "epsilon", "initial_accumulator", "weight_decay"}));
  std::string type;
  if (!r.Has("type")) return r.Error("type", "is required (sgd, adagrad or adam)");
  RETURN_IF_ERROR(r.Choice("type", {"sgd", "adagrad", "adam"}, &type));
  if (!r.Has("learning_rate")) return r.Error("learning_rate", "is required (a number > 0)");
  v1::OptimizerSpec spec;
  float lr = 0;
  RETURN_IF_ERROR(r.Float("learning_rate", kPositive, &lr));
  spec.set_learning_rate(lr);
  float weight_decay = 0;
  RETURN_IF_ERROR(r.Float("weight_decay", kNonNegative, &weight_decay));
  spec.set_weight_decay(weight_decay);
  const std::string other = absl::StrCat("does not apply to optimizer type ", type);
  if (type == "sgd") {
    spec.set_kind(v1::OPTIMIZER_KIND_SGD);
    float momentum = 0;
    bool nesterov = false;
    RETURN_IF_ERROR(r.Float("momentum", kUnitInterval, &momentum));
    RETURN_IF_ERROR(r.Bool("nesterov", &nesterov));
    if (nesterov && momentum == 0) return r.Error("nesterov", "needs a momentum > 0");
    spec.set_momentum(momentum);
    spec.set_nesterov(nesterov);
  } else {
    RETURN_IF_ERROR(Forbid(r, "momentum", other + " (only to sgd)"));
    RETURN_IF_ERROR(Forbid(r, "nesterov", other + " (only to sgd)"));
  }
  if (type == "adagrad") {
    spec.set_kind(v1::OPTIMIZER_KIND_ADAGRAD);
    float accumulator = 0.1f, epsilon = 1e-10f;
    RETURN_IF_ERROR(r.Float("initial_accumulator", kNonNegative, &accumulator));
    RETURN_IF_ERROR(r.Float("epsilon", kNonNegative, &epsilon));
    spec.set_initial_accumulator(accumulator);
    spec.set_epsilon(epsilon);
  } else {
    RETURN_IF_ERROR(Forbid(r, "initial_accumulator", other + " (only to adagrad)"));
  }
  if (type == "adam") {
    spec.set_kind(v1::OPTIMIZER_KIND_ADAM);
    float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
    RETURN_IF_ERROR(r.Float("beta1", kUnitInterval, &beta1));
    RETURN_IF_ERROR(r.Float("beta2", kUnitInterval, &beta2));
    RETURN_IF_ERROR(r.Float("epsilon", kPositive, &epsilon));
    spec.set_beta1(beta1);
    spec.set_beta2(beta2);
    spec.set_epsilon(epsilon);
  } else {
    RETURN_IF_ERROR(Forbid(r, "beta1", other + " (only to adam)"));
    RETURN_IF_ERROR(Forbid(r, "beta2", other + " (only to adam)"));
  }
  if (type == "sgd") RETURN_IF_ERROR(Forbid(r, "epsilon", other + " (only to adagrad and adam)"));
  return spec;
}

const char* WireDtypeName(v1::DType d) {
  return d == v1::DTYPE_BFLOAT16 ? "bf16" : d == v1::DTYPE_FLOAT16 ? "fp16" : "fp32";
}

absl::Status ParseWireDtype(const MapReader& r, v1::DType* out) {
  std::string wire = WireDtypeName(*out);
  RETURN_IF_ERROR(r.Choice("wire_dtype", {"fp32", "bf16", "fp16"}, &wire));
  *out = wire == "bf16" ? v1::DTYPE_BFLOAT16 : wire == "fp16" ? v1::DTYPE_FLOAT16 : v1::DTYPE_FLOAT32;
  return absl::OkStatus();
}

absl::StatusOr<v1::TableSpec> ParseTable(const YamlNode& node, const std::string& path,
                                         const TableDefaults& defaults) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, path,
                                                {"name", "kind", "shape", "chunk_size", "width",
                                                 "optimizer", "init", "non_finite",
                                                 "aggregation", "consistency", "staleness",
                                                 "wire_dtype", "min_count", "capacity_rows",
                                                 "evict_to", "eviction", "cold_tier",
                                                 "ttl_clocks"}));
  v1::TableSpec t;
  std::string name, kind;
  if (!r.Has("name")) return r.Error("name", "is required");
  RETURN_IF_ERROR(r.String("name", /*non_empty=*/true, &name));
  if (!ValidTableName(name)) {
    return r.Error("name", absl::StrCat("must use only letters, digits, '_', '.' and '-'; got \"",
                                        name, "\""));
  }
  t.set_name(name);
  if (!r.Has("kind")) return r.Error("kind", "is required (dense or sparse)");
  RETURN_IF_ERROR(r.Choice("kind", {"dense", "sparse"}, &kind));
  const int64_t max_floats = defaults.request_split_bytes / 4;  // one chunk or row per request
  if (kind == "dense") {
    t.set_kind(v1::TABLE_KIND_DENSE);
    RETURN_IF_ERROR(Forbid(r, "width", "applies to sparse tables only; use shape"));
    RETURN_IF_ERROR(Forbid(r, "min_count", "applies to sparse tables only (admission of new ids)"));
    RETURN_IF_ERROR(Forbid(r, "capacity_rows", "applies to sparse tables only (eviction)"));
    RETURN_IF_ERROR(Forbid(r, "evict_to", "applies to sparse tables only (eviction)"));
    RETURN_IF_ERROR(Forbid(r, "eviction", "applies to sparse tables only"));
    RETURN_IF_ERROR(Forbid(r, "cold_tier", "applies to sparse tables only (evicted rows)"));
    RETURN_IF_ERROR(Forbid(r, "ttl_clocks", "applies to sparse tables only (embedding rows)"));
    if (!r.Has("shape")) return r.Error("shape", "is required for a dense table (e.g. [256, 784])");
    std::vector<int64_t> shape;
    RETURN_IF_ERROR(r.IntList("shape", 1, kMaxElements, 1, &shape));
    int64_t elements = 1;
    for (int64_t d : shape) {
      if (elements > kMaxElements / d) {
        return r.Error("shape", "has more than 2^40 elements");
      }
      elements *= d;
      t.add_shape(d);
    }
    int64_t chunk = DefaultChunkSize(elements);
    RETURN_IF_ERROR(r.Int("chunk_size", 1, max_floats, &chunk));
    t.set_chunk_size(chunk);
  } else {
    t.set_kind(v1::TABLE_KIND_SPARSE);
    RETURN_IF_ERROR(Forbid(r, "shape", "applies to dense tables only; use width"));
    RETURN_IF_ERROR(Forbid(r, "chunk_size", "applies to dense tables only"));
    if (!r.Has("width")) return r.Error("width", "is required for a sparse table (floats per row)");
    int64_t width = 0;
    RETURN_IF_ERROR(r.Int("width", 1, max_floats, &width));
    t.set_width(width);
    int64_t min_count = 1;
    RETURN_IF_ERROR(r.Int("min_count", 1, 1 << 30, &min_count));
    t.set_min_count(static_cast<uint32_t>(min_count));
    int64_t capacity = 0;
    RETURN_IF_ERROR(r.Int("capacity_rows", 1, int64_t{1} << 40, &capacity));
    t.set_capacity_rows(static_cast<uint64_t>(capacity));
    if (r.Has("evict_to") && !r.Has("capacity_rows")) {
      return r.Error("evict_to", "needs capacity_rows (the capacity it is a share of)");
    }
    double evict_to = 0.9;
    RETURN_IF_ERROR(r.Double("evict_to", NumberRange{0.0, /*min_open=*/true, 1.0}, &evict_to));
    t.set_evict_to(capacity > 0 ? evict_to : 0.0);
    if (r.Has("eviction") && !r.Has("capacity_rows")) {
      return r.Error("eviction", "needs capacity_rows (rows are evicted only above it)");
    }
    std::string eviction = "lru";
    RETURN_IF_ERROR(r.Choice("eviction", {"lru", "lfu"}, &eviction));
    t.set_eviction(eviction == "lfu" ? v1::EVICTION_POLICY_LFU : v1::EVICTION_POLICY_LRU);
    bool cold_tier = false;
    RETURN_IF_ERROR(r.Bool("cold_tier", &cold_tier));
    if (cold_tier && capacity == 0) {
      return r.Error("cold_tier", "needs capacity_rows (rows leave memory only by eviction)");
    }
    t.set_cold_tier(cold_tier);
    int64_t ttl = 0;
    RETURN_IF_ERROR(r.Int("ttl_clocks", 1, int64_t{1} << 40, &ttl));
    if (ttl > 0 && cold_tier) {
      return r.Error("ttl_clocks", "cannot be combined with cold_tier (a row past its time is "
                                   "deleted; the cold tier keeps evicted rows): choose one");
    }
    t.set_ttl_clocks(static_cast<uint64_t>(ttl));
  }
  *t.mutable_optimizer() = DefaultOptimizerSpec();
  ASSIGN_OR_RETURN(const YamlNode* opt, r.Map("optimizer"));
  if (opt != nullptr) {
    ASSIGN_OR_RETURN(*t.mutable_optimizer(), ParseOptimizer(*opt, r.Path("optimizer")));
  }
  t.mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  ASSIGN_OR_RETURN(const YamlNode* init, r.Map("init"));
  if (init != nullptr) {
    ASSIGN_OR_RETURN(*t.mutable_init(), ParseInit(*init, r.Path("init")));
    if (absl::Status s = ValidateInitSpec(t); !s.ok()) {
      return ErrorAt(init->where, absl::StrCat("`", r.Path("init"), "`: ", s.message()));
    }
  }
  std::string non_finite = "reject", aggregation = "mean";
  RETURN_IF_ERROR(r.Choice("non_finite", {"reject", "allow"}, &non_finite));
  RETURN_IF_ERROR(r.Choice("aggregation", {"mean", "sum"}, &aggregation));
  t.set_non_finite(non_finite == "allow" ? v1::NON_FINITE_POLICY_ALLOW
                                         : v1::NON_FINITE_POLICY_REJECT);
  t.set_aggregation(aggregation == "sum" ? v1::AGGREGATION_SUM : v1::AGGREGATION_MEAN);
  v1::DType wire = v1::DTYPE_FLOAT32;
  RETURN_IF_ERROR(ParseWireDtype(r, &wire));
  t.set_wire_dtype(wire);
  v1::Consistency mode = v1::CONSISTENCY_BSP;
  int64_t staleness = 0;
  RETURN_IF_ERROR(ParseConsistency(r, "consistency", defaults.consistency, defaults.staleness,
                                   &mode, &staleness));
  t.set_consistency(mode);
  t.set_staleness(staleness);
  return t;
}

}  // namespace cairn::config_internal
