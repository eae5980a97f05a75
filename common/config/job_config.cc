#include "common/config/job_config.h"


#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "common/config/internal/map_reader.h"
#include "common/config/internal/override_tree.h"
#include "common/config/internal/table_parser.h"
#include "common/config/internal/yaml_tree.h"
#include "common/hash.h"
#include "common/net.h"
#include "common/partitioning.h"
#include "common/status_macros.h"

namespace cairn {
namespace {

using config_internal::ErrorAt;
using config_internal::MapReader;
using config_internal::NumberRange;
using config_internal::YamlNode;

constexpr int32_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int32_t kMaxPartitions = 65536;
constexpr int64_t kMiB = int64_t{1} << 20;

absl::Status ParseCluster(const YamlNode& node, ClusterConfig* c) {
  ASSIGN_OR_RETURN(MapReader r,
                   MapReader::Open(node, "cluster",
                                   {"coordinator", "servers", "workers", "partitions",
                                    "lease_timeout", "heartbeat_interval", "startup_timeout",
                                    "replication", "rereplication_delay", "on_worker_loss",
                                    "state_dir", "exit_when_done", "shutdown_grace"}));
  RETURN_IF_ERROR(r.String("coordinator", /*non_empty=*/true, &c->coordinator));
  if (r.Has("coordinator")) {
    absl::StatusOr<HostPort> hp = ParseHostPort(c->coordinator, r.Path("coordinator"));
    if (!hp.ok()) return ErrorAt(r.Where("coordinator"), std::string(hp.status().message()));
  }
  RETURN_IF_ERROR(r.Int32("servers", 1, kMaxInt32, &c->servers));
  RETURN_IF_ERROR(r.Int32("workers", 1, kMaxInt32, &c->workers));
  RETURN_IF_ERROR(r.Int32("partitions", 1, kMaxPartitions, &c->partitions));
  RETURN_IF_ERROR(r.Duration("lease_timeout", absl::ZeroDuration(), &c->lease_timeout));
  RETURN_IF_ERROR(r.Duration("heartbeat_interval", absl::ZeroDuration(), &c->heartbeat_interval));
  RETURN_IF_ERROR(r.Duration("startup_timeout", absl::ZeroDuration(), &c->startup_timeout));
  if (c->heartbeat_interval >= c->lease_timeout) {
    const std::string heartbeat = FormatDurationForConfig(c->heartbeat_interval);
    const std::string lease = FormatDurationForConfig(c->lease_timeout);
    if (r.Has("heartbeat_interval")) {
      return r.Error("heartbeat_interval", absl::StrCat("(", heartbeat,
                                                        ") must be shorter than lease_timeout (",
                                                        lease, ")"));
    }
    return r.Error("lease_timeout", absl::StrCat("(", lease, ") must be longer than "
                                                 "heartbeat_interval (", heartbeat,
                                                 ", its default)"));
  }
  c->replication = std::min(2, c->servers);  // default: a backup when there is a server for it
  RETURN_IF_ERROR(r.Int32("replication", 1, kMaxInt32, &c->replication));
  if (c->replication > c->servers) {
    return r.Error("replication",
                   absl::StrCat("(", c->replication, ") is more than `cluster.servers` (",
                                c->servers,
                                "): each copy of a partition needs a server of its own"));
  }
  RETURN_IF_ERROR(
      r.Duration("rereplication_delay", -absl::InfiniteDuration(), &c->rereplication_delay));
  RETURN_IF_ERROR(r.String("state_dir", /*non_empty=*/true, &c->state_dir));
  c->state_dir_set = r.Has("state_dir");
  std::string loss = WorkerLossPolicyName(c->on_worker_loss);
  RETURN_IF_ERROR(r.Choice("on_worker_loss", {"continue", "fail"}, &loss));
  c->on_worker_loss = loss == "fail" ? WorkerLossPolicy::kFail : WorkerLossPolicy::kContinue;
  RETURN_IF_ERROR(r.Bool("exit_when_done", &c->exit_when_done));
  RETURN_IF_ERROR(r.Duration("shutdown_grace", absl::ZeroDuration(), &c->shutdown_grace));
  return absl::OkStatus();
}

// rpc.busy_poll: `auto` (nullopt) or a duration in [0, kMaxBusyPoll].
absl::Status ParseBusyPoll(const MapReader& r, std::optional<absl::Duration>* out) {
  std::string text;
  RETURN_IF_ERROR(r.String("busy_poll", /*non_empty=*/true, &text));
  if (!r.Has("busy_poll") || text == "auto") return absl::OkStatus();
  const std::string expected = absl::StrCat("must be `auto` or a duration from 0s (off) to ",
                                            FormatDurationForConfig(kMaxBusyPoll));
  absl::StatusOr<absl::Duration> d = ParseDuration(text);
  if (!d.ok()) {
    return r.Error("busy_poll", absl::StrCat(expected, "; got ", text, " (",
                                             d.status().message(), ")"));
  }
  if (*d > kMaxBusyPoll) {  // ParseDuration takes no sign
    return r.Error("busy_poll", absl::StrCat(expected, "; got ", text));
  }
  *out = *d;
  return absl::OkStatus();
}

absl::Status ParseRpc(const YamlNode& node, RpcConfig* rpc) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, "rpc", {"max_message_size",
                                                              "request_split_size", "deadline",
                                                              "shared_memory",
                                                              "shared_memory_size",
                                                              "shared_memory_split_size",
                                                              "requests_in_flight",
                                                              "server_threads",
                                                              "busy_poll", "call_slots",
                                                              "push_ack"}));
  RETURN_IF_ERROR(r.Size("max_message_size", kMiB, kMaxInt32, &rpc->max_message_bytes));
  RETURN_IF_ERROR(r.Size("request_split_size", 1, kMaxInt32, &rpc->request_split_bytes));
  if (rpc->request_split_bytes > rpc->max_message_bytes / 2) {
    return r.Error(r.Has("request_split_size") ? "request_split_size" : "max_message_size",
                   absl::StrCat("request_split_size (", rpc->request_split_bytes,
                                " bytes) must be at most half of max_message_size (",
                                rpc->max_message_bytes, " bytes)"));
  }
  RETURN_IF_ERROR(r.Duration("deadline", absl::ZeroDuration(), &rpc->deadline));
  RETURN_IF_ERROR(r.Bool("shared_memory", &rpc->shared_memory));
  RETURN_IF_ERROR(r.Size("shared_memory_size", kMiB, 1ll << 40, &rpc->shared_memory_bytes));
  // Unset: 2 MiB, within half of max_message_size and a quarter of the
  // region (requests in flight share it), or request_split_size when larger.
  rpc->shared_memory_split_bytes = std::max(
      rpc->request_split_bytes,
      std::min({rpc->shared_memory_split_bytes, rpc->max_message_bytes / 2,
                rpc->shared_memory_bytes / 4}));
  RETURN_IF_ERROR(
      r.Size("shared_memory_split_size", 1, kMaxInt32, &rpc->shared_memory_split_bytes));
  if (rpc->shared_memory_split_bytes > rpc->max_message_bytes / 2) {
    // A request the region has no room for at that moment goes inline.
    return r.Error(r.Has("shared_memory_split_size") ? "shared_memory_split_size"
                                                     : "max_message_size",
                   absl::StrCat("shared_memory_split_size (", rpc->shared_memory_split_bytes,
                                " bytes) must be at most half of max_message_size (",
                                rpc->max_message_bytes, " bytes): a request the region has "
                                "no room for goes through gRPC"));
  }
  RETURN_IF_ERROR(r.Int32("requests_in_flight", 0, 1 << 20, &rpc->requests_in_flight));
  RETURN_IF_ERROR(r.Int32("server_threads", 1, 256, &rpc->server_threads));
  RETURN_IF_ERROR(r.Bool("call_slots", &rpc->call_slots));
  RETURN_IF_ERROR(r.Choice("push_ack", {"accepted", "applied"}, &rpc->push_ack));
  return ParseBusyPoll(r, &rpc->busy_poll);
}

absl::Status ParseEmbedding(const YamlNode& node, EmbeddingConfig* e) {
  ASSIGN_OR_RETURN(MapReader r,
                   MapReader::Open(node, "training.embedding",
                                   {"width", "min_count", "capacity_rows", "evict_to",
                                    "eviction", "cold_tier", "ttl_clocks", "init_scale"}));
  RETURN_IF_ERROR(r.Int32("width", 1, 4096, &e->width));
  RETURN_IF_ERROR(r.Int("min_count", 1, 1 << 30, &e->min_count));
  RETURN_IF_ERROR(r.Int("capacity_rows", 1, int64_t{1} << 40, &e->capacity_rows));
  if (r.Has("evict_to") && !r.Has("capacity_rows")) {
    return r.Error("evict_to", "needs capacity_rows (the capacity it is a share of)");
  }
  RETURN_IF_ERROR(r.Double("evict_to", NumberRange{0.0, /*min_open=*/true, 1.0}, &e->evict_to));
  if (r.Has("eviction") && !r.Has("capacity_rows")) {
    return r.Error("eviction", "needs capacity_rows (rows are evicted only above it)");
  }
  RETURN_IF_ERROR(r.Choice("eviction", {"lru", "lfu"}, &e->eviction));
  RETURN_IF_ERROR(r.Bool("cold_tier", &e->cold_tier));
  if (e->cold_tier && e->capacity_rows == 0) {
    return r.Error("cold_tier", "needs capacity_rows (rows leave memory only by eviction)");
  }
  RETURN_IF_ERROR(r.Int("ttl_clocks", 1, int64_t{1} << 40, &e->ttl_clocks));
  if (e->ttl_clocks > 0 && e->cold_tier) {
    return r.Error("ttl_clocks", "cannot be combined with cold_tier (a row past its time is "
                                 "deleted; the cold tier keeps evicted rows): choose one");
  }
  RETURN_IF_ERROR(r.Double("init_scale", NumberRange{0.0, /*min_open=*/false}, &e->init_scale));
  return absl::OkStatus();
}

absl::Status ParseTraining(const YamlNode& node, TrainingConfig* t) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, "training",
                                                {"model", "layers", "batch_size", "epochs",
                                                 "max_steps", "seed", "data_dir", "device",
                                                 "slowdown", "optimizer", "wire_dtype",
                                                 "embedding"}));
  RETURN_IF_ERROR(r.Choice("model", {"mlp", "ctr"}, &t->model));
  const bool ctr = t->model == "ctr";
  ASSIGN_OR_RETURN(const YamlNode* embedding, r.Map("embedding"));
  if (embedding != nullptr && !ctr) {
    return r.Error("embedding", "applies to model: ctr only");
  }
  if (embedding != nullptr) RETURN_IF_ERROR(ParseEmbedding(*embedding, &t->embedding));
  if (ctr) t->layers = {CtrHeadInputs(t->embedding.width), 64, 1};
  if (r.Has("layers")) {
    std::vector<int64_t> layers;
    RETURN_IF_ERROR(r.IntList("layers", 1, kMaxInt32, 2, &layers));
    t->layers.assign(layers.begin(), layers.end());
  }
  if (ctr && (t->layers.front() != CtrHeadInputs(t->embedding.width) || t->layers.back() != 1)) {
    return r.Error("layers", absl::StrCat("the ctr model's head takes ",
                                          CtrHeadInputs(t->embedding.width),
                                          " inputs (26 fields x embedding.width ",
                                          t->embedding.width,
                                          " + 13 integer features) and gives 1 output; got [",
                                          absl::StrJoin(t->layers, ", "), "]"));
  }
  if (ctr && !r.Has("data_dir")) {
    return r.Error("model", "the ctr model needs training.data_dir: a directory with train.txt "
                            "and test.txt in the Criteo format (tools/ctr-generate writes one)");
  }
  RETURN_IF_ERROR(r.Int32("batch_size", 1, kMaxInt32, &t->batch_size));
  RETURN_IF_ERROR(r.Int32("epochs", 1, kMaxInt32, &t->epochs));
  RETURN_IF_ERROR(r.Int("max_steps", 0, kMaxInt64, &t->max_steps));
  RETURN_IF_ERROR(r.Uint64("seed", &t->seed));
  RETURN_IF_ERROR(r.String("data_dir", /*non_empty=*/true, &t->data_dir));
  RETURN_IF_ERROR(r.Choice("device", {"auto", "cpu", "cuda"}, &t->device));
  RETURN_IF_ERROR(r.Double("slowdown", NumberRange{1.0, false}, &t->slowdown));
  ASSIGN_OR_RETURN(const YamlNode* opt, r.Map("optimizer"));
  if (opt != nullptr) {
    ASSIGN_OR_RETURN(t->optimizer, config_internal::ParseOptimizer(*opt, r.Path("optimizer")));
  }
  RETURN_IF_ERROR(config_internal::ParseWireDtype(r, &t->wire_dtype));
  return absl::OkStatus();
}

absl::Status ParseMetrics(const YamlNode& node, MetricsConfig* m) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, "metrics", {"host", "port", "tls"}));
  RETURN_IF_ERROR(r.String("host", /*non_empty=*/true, &m->host));
  RETURN_IF_ERROR(r.Int32("port", 0, 65535, &m->port));
  RETURN_IF_ERROR(r.Bool("tls", &m->tls));
  absl::StatusOr<HostPort> hp =
      ParseHostPort(FormatHostPort(m->host, m->port), r.Path("host"), /*allow_zero_port=*/true);
  if (!hp.ok()) return ErrorAt(r.Where("host"), std::string(hp.status().message()));
  return absl::OkStatus();
}

absl::Status ParseSecurity(const YamlNode& node, SecurityConfig* c) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, "security",
                                                {"tls", "ca_file", "cert_file", "key_file",
                                                 "tokens_file", "reload_every"}));
  RETURN_IF_ERROR(r.Bool("tls", &c->tls));
  RETURN_IF_ERROR(r.String("ca_file", /*non_empty=*/true, &c->ca_file));
  RETURN_IF_ERROR(r.String("cert_file", /*non_empty=*/true, &c->cert_file));
  RETURN_IF_ERROR(r.String("key_file", /*non_empty=*/true, &c->key_file));
  RETURN_IF_ERROR(r.String("tokens_file", /*non_empty=*/true, &c->tokens_file));
  RETURN_IF_ERROR(r.Duration("reload_every", absl::ZeroDuration(), &c->reload_every));
  if (c->reload_every < absl::Seconds(1)) {
    return r.Error("reload_every", "must be at least 1s (the certificate files are re-read this often)");
  }
  return absl::OkStatus();
}

absl::Status ParseCheckpoint(const YamlNode& node, CheckpointConfig* c) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Open(node, "checkpoint",
                                                {"dir", "every_clocks", "every", "keep",
                                                 "resume", "init_from"}));
  RETURN_IF_ERROR(r.String("dir", /*non_empty=*/true, &c->dir));
  RETURN_IF_ERROR(r.Int("every_clocks", 1, kMaxInt64, &c->every_clocks));
  RETURN_IF_ERROR(r.Duration("every", absl::ZeroDuration(), &c->every));
  RETURN_IF_ERROR(r.Int32("keep", 1, kMaxInt32, &c->keep));
  RETURN_IF_ERROR(r.String("resume", /*non_empty=*/true, &c->resume));
  RETURN_IF_ERROR(r.String("init_from", /*non_empty=*/true, &c->init_from));
  if (c->dir.empty() && (r.Has("every_clocks") || r.Has("every"))) {
    return r.Error(r.Has("every_clocks") ? "every_clocks" : "every",
                   "a checkpoint schedule needs checkpoint.dir (where the servers write)");
  }
  int64_t clock = 0;
  if (c->resume != "none" && c->resume != "latest" &&
      !(absl::SimpleAtoi(c->resume, &clock) && clock >= 0)) {
    return r.Error("resume", absl::StrCat("expected none, latest or a clock (integer >= 0), got \"",
                                          c->resume, "\""));
  }
  if (c->dir.empty() && c->resume != "none") {
    return r.Error("resume", "needs checkpoint.dir (where the checkpoints are)");
  }
  return absl::OkStatus();
}

// cluster.state_dir: "none" turns persistence off; unset, it follows
// checkpoint.dir (the coordinator's store shares <checkpoint.dir>/coordinator).
void ResolveStateDir(JobConfig* config) {
  ClusterConfig& c = config->cluster;
  if (c.state_dir == kNoStateDir) {
    c.state_dir.clear();
  } else if (!c.state_dir_set && !config->checkpoint.dir.empty()) {
    c.state_dir = config->checkpoint.dir + "/coordinator";
  }
}

// Explicit tables, then the model's; names unique; ids = index.
absl::Status BuildTables(const MapReader& top, JobConfig* config) {
  config_internal::TableDefaults defaults;
  defaults.consistency = config->consistency;
  defaults.staleness = config->staleness;
  defaults.request_split_bytes = config->rpc.request_split_bytes;
  std::vector<std::string> wheres;  // location of each table, for name clashes
  ASSIGN_OR_RETURN(const YamlNode* list, top.Sequence("tables"));
  if (list != nullptr) {
    for (size_t i = 0; i < list->items.size(); ++i) {
      ASSIGN_OR_RETURN(v1::TableSpec t, config_internal::ParseTable(
                                            list->items[i], absl::StrCat("tables[", i, "]"),
                                            defaults));
      const YamlNode* name = list->items[i].Find("name");
      wheres.push_back(name->where);
      config->tables.push_back(std::move(t));
    }
  }
  const size_t num_explicit = config->tables.size();
  if (config->has_training) {
    for (v1::TableSpec& t : ModelTables(config->training, config->consistency, config->staleness)) {
      wheres.push_back(top.Where("training"));
      config->tables.push_back(std::move(t));
    }
  }
  for (size_t i = 0; i < config->tables.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (config->tables[i].name() != config->tables[j].name()) continue;
      const bool model = i >= num_explicit;
      return ErrorAt(wheres[i],
                     absl::StrCat("table name \"", config->tables[i].name(), "\" is used twice",
                                  model ? " (the training model adds mlp.fc<i>.weight and "
                                          "mlp.fc<i>.bias, or ctr.c<f> and ctr.fc<i>.*)"
                                        : "",
                                  "; first at ", wheres[j]));
    }
    config->tables[i].set_id(static_cast<uint32_t>(i));
  }
  return absl::OkStatus();
}

}  // namespace

const char* WorkerLossPolicyName(WorkerLossPolicy policy) {
  return policy == WorkerLossPolicy::kFail ? "fail" : "continue";
}

std::string ConfigHash(const std::string& source, const std::vector<std::string>& overrides) {
  std::string text = source;
  for (const std::string& o : overrides) absl::StrAppend(&text, "\n--set ", o);
  return absl::StrFormat("%016x", Xxh64(text));
}

std::string ConfigHashMismatch(absl::string_view process, const std::string& source,
                               const std::vector<std::string>& overrides,
                               const std::string& coordinators) {
  const std::string mine = ConfigHash(source, overrides);
  if (coordinators.empty() || mine == coordinators) return "";
  std::vector<std::string> resumed = overrides;
  resumed.push_back("checkpoint.resume=latest");  // what the coordinator's --resume adds
  if (ConfigHash(source, resumed) == coordinators) return "";
  return absl::StrCat(
      process, " runs config hash ", mine, " and the coordinator ", coordinators,
      ": they were started with different job files or --set overrides. The tables come from "
      "the coordinator, but each process reads its own rpc, metrics, security and training "
      "settings; give every process of the job the same file and overrides "
      "(docs/config.md, \"Config hash\")");
}

absl::StatusOr<JobConfig> ParseJobConfig(const std::string& yaml, const std::string& file_name,
                                         const std::vector<std::string>& overrides) {
  ASSIGN_OR_RETURN(YamlNode root, config_internal::ParseYamlTree(yaml, file_name));
  if (root.IsNull()) {
    return ErrorAt(root.where, "the config is empty; expected a map with some of cluster, rpc, "
                               "consistency, tables, training, metrics, checkpoint, security");
  }
  if (!root.IsMap()) {
    return ErrorAt(root.where, absl::StrCat("the top level must be a map (cluster:, tables:, ...); "
                                            "got ", config_internal::Describe(root)));
  }
  for (const std::string& o : overrides) {
    RETURN_IF_ERROR(config_internal::ApplyOverrideToTree(o, &root));
  }
  JobConfig config;
  config.path = file_name;
  config.source = yaml;
  config.overrides = overrides;
  config.config_hash = ConfigHash(yaml, overrides);
  ASSIGN_OR_RETURN(MapReader top, MapReader::Open(root, "", {"cluster", "rpc", "consistency",
                                                             "tables", "training", "metrics",
                                                             "checkpoint", "security"}));
  ASSIGN_OR_RETURN(const YamlNode* cluster, top.Map("cluster"));
  if (cluster != nullptr) RETURN_IF_ERROR(ParseCluster(*cluster, &config.cluster));
  ASSIGN_OR_RETURN(const YamlNode* rpc, top.Map("rpc"));
  if (rpc != nullptr) RETURN_IF_ERROR(ParseRpc(*rpc, &config.rpc));
  ASSIGN_OR_RETURN(const YamlNode* consistency, top.Map("consistency"));
  if (consistency != nullptr) {
    ASSIGN_OR_RETURN(MapReader r, MapReader::Open(*consistency, "consistency",
                                                  {"mode", "staleness"}));
    RETURN_IF_ERROR(config_internal::ParseConsistency(r, "mode", v1::CONSISTENCY_BSP, 0,
                                                      &config.consistency, &config.staleness));
  }
  ASSIGN_OR_RETURN(const YamlNode* training, top.Map("training"));
  if (training != nullptr) {
    config.has_training = true;
    RETURN_IF_ERROR(ParseTraining(*training, &config.training));
  }
  ASSIGN_OR_RETURN(const YamlNode* metrics, top.Map("metrics"));
  if (metrics != nullptr) RETURN_IF_ERROR(ParseMetrics(*metrics, &config.metrics));
  ASSIGN_OR_RETURN(const YamlNode* checkpoint, top.Map("checkpoint"));
  if (checkpoint != nullptr) RETURN_IF_ERROR(ParseCheckpoint(*checkpoint, &config.checkpoint));
  ASSIGN_OR_RETURN(const YamlNode* security, top.Map("security"));
  if (security != nullptr) RETURN_IF_ERROR(ParseSecurity(*security, &config.security));
  ResolveStateDir(&config);
  RETURN_IF_ERROR(BuildTables(top, &config));
  return config;
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path,
                                        const std::vector<std::string>& overrides) {
  std::error_code dir_error;
  if (std::filesystem::is_directory(path, dir_error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a directory, not a YAML job file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such config file"));
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read the config file: ", std::strerror(err)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": read failed"));
  return ParseJobConfig(text.str(), path, overrides);
}

v1::JobSpec ToJobSpec(const JobConfig& config) {
  v1::JobSpec spec;
  const uint32_t partitions = static_cast<uint32_t>(config.cluster.partitions);
  for (const v1::TableSpec& t : config.tables) {
    v1::TableSpec* table = spec.add_tables();
    *table = t;
    if (t.kind() == v1::TABLE_KIND_DENSE) {
      table->set_partition_offset(DensePartitionOffset(t.name(), partitions));
    }
  }
  spec.set_num_partitions(partitions);
  spec.set_num_workers(static_cast<uint32_t>(config.cluster.workers));
  spec.set_num_servers(static_cast<uint32_t>(config.cluster.servers));
  spec.set_max_message_bytes(config.rpc.max_message_bytes);
  spec.set_request_split_bytes(config.rpc.request_split_bytes);
  spec.set_shared_memory_bytes(config.rpc.shared_memory ? config.rpc.shared_memory_bytes : 0);
  spec.set_shared_memory_split_bytes(config.rpc.shared_memory_split_bytes);
  spec.set_pull_deadline_ms(absl::ToInt64Milliseconds(config.rpc.deadline));
  spec.set_lease_timeout_ms(absl::ToInt64Milliseconds(config.cluster.lease_timeout));
  spec.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(config.cluster.heartbeat_interval));
  spec.set_replication(static_cast<uint32_t>(config.cluster.replication));
  spec.set_rereplication_delay_ms(absl::ToInt64Milliseconds(config.cluster.rereplication_delay));
  spec.mutable_checkpoint()->set_dir(config.checkpoint.dir);
  spec.mutable_checkpoint()->set_every_clocks(config.checkpoint.every_clocks);
  spec.mutable_checkpoint()->set_every_ms(absl::ToInt64Milliseconds(config.checkpoint.every));
  spec.mutable_checkpoint()->set_keep(config.checkpoint.keep);
  spec.mutable_checkpoint()->set_init_from(config.checkpoint.init_from);
  spec.set_config_hash(config.config_hash.empty() ? ConfigHash(config.source, config.overrides)
                                                  : config.config_hash);
  return spec;
}

}  // namespace cairn
