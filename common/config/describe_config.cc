// DescribeConfig: the effective configuration, one "key: value" line each.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/internal/table_parser.h"
#include "common/config/job_config.h"

namespace cairn {
namespace {

class Lines {
 public:
  template <typename T>
  void Add(const std::string& key, const T& value) {
    absl::StrAppend(&text_, key, ": ", value, "\n");
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

const char* OptimizerName(v1::OptimizerKind kind) {
  switch (kind) {
    case v1::OPTIMIZER_KIND_ADAGRAD:
      return "adagrad";
    case v1::OPTIMIZER_KIND_ADAM:
      return "adam";
    default:
      return "sgd";
  }
}

const char* InitName(v1::InitKind kind) {
  switch (kind) {
    case v1::INIT_KIND_CONSTANT:
      return "constant";
    case v1::INIT_KIND_UNIFORM:
      return "uniform";
    case v1::INIT_KIND_NORMAL:
      return "normal";
    case v1::INIT_KIND_HE_UNIFORM:
      return "he_uniform";
    default:
      return "zeros";
  }
}

// The keys that apply to the optimizer's type, as the parser accepts them.
void AddOptimizer(const std::string& p, const v1::OptimizerSpec& o, Lines* out) {
  out->Add(p + ".type", OptimizerName(o.kind()));
  out->Add(p + ".learning_rate", o.learning_rate());
  if (o.kind() == v1::OPTIMIZER_KIND_SGD) {
    out->Add(p + ".momentum", o.momentum());
    out->Add(p + ".nesterov", o.nesterov() ? "true" : "false");
  }
  if (o.kind() == v1::OPTIMIZER_KIND_ADAM) {
    out->Add(p + ".beta1", o.beta1());
    out->Add(p + ".beta2", o.beta2());
  }
  if (o.kind() == v1::OPTIMIZER_KIND_ADAGRAD) {
    out->Add(p + ".initial_accumulator", o.initial_accumulator());
  }
  if (o.kind() != v1::OPTIMIZER_KIND_SGD) out->Add(p + ".epsilon", o.epsilon());
  out->Add(p + ".weight_decay", o.weight_decay());
}

void AddTable(const std::string& p, const v1::TableSpec& t, Lines* out) {
  out->Add(p + ".name", t.name());
  out->Add(p + ".kind", t.kind() == v1::TABLE_KIND_SPARSE ? "sparse" : "dense");
  if (t.kind() == v1::TABLE_KIND_SPARSE) {
    out->Add(p + ".width", t.width());
    out->Add(p + ".min_count", std::max<uint32_t>(t.min_count(), 1));
    if (t.capacity_rows() > 0) {
      out->Add(p + ".capacity_rows", t.capacity_rows());
      out->Add(p + ".evict_to", t.evict_to());
      out->Add(p + ".eviction", t.eviction() == v1::EVICTION_POLICY_LFU ? "lfu" : "lru");
      out->Add(p + ".cold_tier", t.cold_tier() ? "true" : "false");
    }
    if (t.ttl_clocks() > 0) out->Add(p + ".ttl_clocks", t.ttl_clocks());
  } else {
    out->Add(p + ".shape", absl::StrCat("[", absl::StrJoin(t.shape(), ", "), "]"));
    out->Add(p + ".chunk_size", t.chunk_size());
  }
  AddOptimizer(p + ".optimizer", t.optimizer(), out);
  out->Add(p + ".init.type", InitName(t.init().kind()));
  if (t.init().kind() == v1::INIT_KIND_CONSTANT) out->Add(p + ".init.value", t.init().value());
  if (t.init().kind() == v1::INIT_KIND_UNIFORM || t.init().kind() == v1::INIT_KIND_NORMAL) {
    out->Add(p + ".init.scale", t.init().scale());
  }
  if (t.init().kind() == v1::INIT_KIND_UNIFORM || t.init().kind() == v1::INIT_KIND_NORMAL ||
      t.init().kind() == v1::INIT_KIND_HE_UNIFORM) {
    out->Add(p + ".init.seed", t.init().seed());
  }
  out->Add(p + ".non_finite", t.non_finite() == v1::NON_FINITE_POLICY_ALLOW ? "allow" : "reject");
  out->Add(p + ".aggregation", t.aggregation() == v1::AGGREGATION_SUM ? "sum" : "mean");
  out->Add(p + ".wire_dtype", config_internal::WireDtypeName(t.wire_dtype()));
  out->Add(p + ".consistency", config_internal::ConsistencyName(t.consistency()));
  out->Add(p + ".staleness", t.staleness());
}

}  // namespace

std::string DescribeConfig(const JobConfig& c) {
  Lines out;
  out.Add("config.path", c.path.empty() ? "(none)" : c.path);
  for (size_t i = 0; i < c.overrides.size(); ++i) {
    out.Add(absl::StrCat("config.overrides[", i, "]"), c.overrides[i]);
  }
  out.Add("config.hash", c.config_hash.empty() ? ConfigHash(c.source, c.overrides)
                                               : c.config_hash);
  out.Add("cluster.coordinator", c.cluster.coordinator);
  out.Add("cluster.servers", c.cluster.servers);
  out.Add("cluster.workers", c.cluster.workers);
  out.Add("cluster.partitions", c.cluster.partitions);
  out.Add("cluster.lease_timeout", FormatDurationForConfig(c.cluster.lease_timeout));
  out.Add("cluster.heartbeat_interval", FormatDurationForConfig(c.cluster.heartbeat_interval));
  out.Add("cluster.startup_timeout", FormatDurationForConfig(c.cluster.startup_timeout));
  out.Add("cluster.replication", c.cluster.replication);
  out.Add("cluster.rereplication_delay", FormatDurationForConfig(c.cluster.rereplication_delay));
  out.Add("cluster.on_worker_loss", WorkerLossPolicyName(c.cluster.on_worker_loss));
  out.Add("cluster.state_dir", c.cluster.state_dir.empty() ? kNoStateDir : c.cluster.state_dir);
  out.Add("cluster.exit_when_done", c.cluster.exit_when_done ? "true" : "false");
  out.Add("cluster.shutdown_grace", FormatDurationForConfig(c.cluster.shutdown_grace));
  out.Add("rpc.max_message_size", FormatSizeForConfig(c.rpc.max_message_bytes));
  out.Add("rpc.request_split_size", FormatSizeForConfig(c.rpc.request_split_bytes));
  out.Add("rpc.deadline", FormatDurationForConfig(c.rpc.deadline));
  out.Add("rpc.shared_memory", c.rpc.shared_memory ? "true" : "false");
  out.Add("rpc.shared_memory_size", FormatSizeForConfig(c.rpc.shared_memory_bytes));
  out.Add("rpc.shared_memory_split_size", FormatSizeForConfig(c.rpc.shared_memory_split_bytes));
  out.Add("rpc.requests_in_flight", c.rpc.requests_in_flight);
  out.Add("rpc.server_threads", c.rpc.server_threads);
  out.Add("rpc.busy_poll",
          c.rpc.busy_poll ? FormatDurationForConfig(*c.rpc.busy_poll) : std::string("auto"));
  out.Add("rpc.call_slots", c.rpc.call_slots ? "true" : "false");
  out.Add("rpc.push_ack", c.rpc.push_ack);
  out.Add("consistency.mode", config_internal::ConsistencyName(c.consistency));
  out.Add("consistency.staleness", c.staleness);
  for (size_t i = 0; i < c.tables.size(); ++i) {
    AddTable(absl::StrCat("tables[", i, "]"), c.tables[i], &out);
  }
  if (c.has_training) {
    const TrainingConfig& t = c.training;
    out.Add("training.model", t.model);
    out.Add("training.layers", absl::StrCat("[", absl::StrJoin(t.layers, ", "), "]"));
    if (t.model == "ctr") {
      out.Add("training.embedding.width", t.embedding.width);
      out.Add("training.embedding.min_count", t.embedding.min_count);
      out.Add("training.embedding.capacity_rows", t.embedding.capacity_rows);
      out.Add("training.embedding.evict_to", t.embedding.evict_to);
      out.Add("training.embedding.eviction", t.embedding.eviction);
      out.Add("training.embedding.cold_tier", t.embedding.cold_tier ? "true" : "false");
      if (t.embedding.ttl_clocks > 0) {
        out.Add("training.embedding.ttl_clocks", t.embedding.ttl_clocks);
      }
      out.Add("training.embedding.init_scale", t.embedding.init_scale);
    }
    out.Add("training.batch_size", t.batch_size);
    out.Add("training.epochs", t.epochs);
    out.Add("training.max_steps", t.max_steps);
    out.Add("training.seed", t.seed);
    out.Add("training.data_dir", t.data_dir);
    out.Add("training.device", t.device);
    out.Add("training.slowdown", t.slowdown);
    AddOptimizer("training.optimizer", t.optimizer, &out);
    out.Add("training.wire_dtype", config_internal::WireDtypeName(t.wire_dtype));
  }
  out.Add("metrics.host", c.metrics.host);
  out.Add("metrics.port", c.metrics.port);
  out.Add("metrics.tls", c.metrics.tls ? "true" : "false");
  out.Add("checkpoint.dir", c.checkpoint.dir);
  // 0 is how the job file's `none` (the default) is kept.
  if (c.checkpoint.every_clocks > 0) {
    out.Add("checkpoint.every_clocks", c.checkpoint.every_clocks);
  } else {
    out.Add("checkpoint.every_clocks", "none");
  }
  out.Add("checkpoint.every", c.checkpoint.every > absl::ZeroDuration()
                                  ? FormatDurationForConfig(c.checkpoint.every)
                                  : std::string("none"));
  out.Add("checkpoint.keep", c.checkpoint.keep);
  out.Add("checkpoint.resume", c.checkpoint.resume);
  out.Add("checkpoint.init_from", c.checkpoint.init_from);
  out.Add("security.tls", c.security.tls ? "true" : "false");
  out.Add("security.ca_file", c.security.ca_file);
  out.Add("security.cert_file", c.security.cert_file);
  out.Add("security.key_file", c.security.key_file);
  out.Add("security.tokens_file", c.security.tokens_file);
  out.Add("security.reload_every", FormatDurationForConfig(c.security.reload_every));
  return out.Take();
}

}  // namespace cairn
