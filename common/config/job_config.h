// A job's configuration: one YAML file (cluster, rpc, consistency, tables,
// training, metrics), parsed strictly. docs/config.md is the reference.
//
// Strictness: an unknown key, a duplicated key, a value of the wrong type or
// out of range is an error naming file:line:column and the key's path
// (`consistency.stalenes`); nothing falls back to a default silently.
// Durations take units (`500ms`, `3s`, `2m`); sizes take units (`64MiB`,
// `512KiB`, `1GiB`, or a plain byte count); see units.h.
//
// Command-line overrides ("consistency.staleness=2") are applied onto the
// parsed YAML before validation, so they pass the same checks; see overrides.h.
#ifndef CAIRN_COMMON_CONFIG_JOB_CONFIG_H_
#define CAIRN_COMMON_CONFIG_JOB_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cairn/v1/types.pb.h"
#include "common/config/units.h"

namespace cairn {

// What the job does when the coordinator declares a worker dead (its lease
// expired: a crash or a partition, not a clean leave). `kContinue`: servers
// drop it from the minimum clock and the others go on; the loss is logged
// and counted. `kFail`: the coordinator fails the job (exits non-zero naming
// the worker), so no run "succeeds" having skipped part of the data.
enum class WorkerLossPolicy { kContinue, kFail };

struct ClusterConfig {
  std::string coordinator = "127.0.0.1:7070";  // host:port of cairn-coordinator
  int servers = 1;                 // expected servers (>= 1)
  int workers = 1;                 // expected workers (>= 1)
  int partitions = 64;             // P virtual partitions (>= 1), fixed for the job
  absl::Duration lease_timeout = absl::Seconds(5);
  absl::Duration heartbeat_interval = absl::Milliseconds(500);  // < lease_timeout
  absl::Duration startup_timeout = absl::Seconds(60);
  // Copies of each partition (a primary and replication - 1 backups), in
  // 1..servers. Partitions are placed in replica groups; when a primary's
  // lease expires the coordinator promotes its first live backup.
  int replication = 1;  // parsed default: min(2, servers)
  // How long a replica group left short of copies by a dead server waits
  // for an empty server (a replacement, or the dead one rejoining after a
  // cut) before a server that already holds other groups takes the copy.
  // An empty server takes it at once.
  absl::Duration rereplication_delay = absl::Seconds(30);
  WorkerLossPolicy on_worker_loss = WorkerLossPolicy::kContinue;  // `continue` | `fail`
  // Where cairn-coordinator keeps its state (members, partition map) so a
  // restarted coordinator resumes the job: a RocksDB store. Resolved at
  // parse: the YAML value; unset, <checkpoint.dir>/coordinator when
  // checkpoint.dir is set (shared with the checkpoint records); empty = no
  // persistence (unset without checkpoint.dir, or `none`).
  std::string state_dir;
  bool state_dir_set = false;      // the YAML (or an override) named state_dir
  // When every worker has finished and left: the coordinator takes a final
  // checkpoint (with checkpoint.dir), tells the servers to stop, they exit
  // 0, and it exits 0 last. false: servers and coordinator stay up for
  // workers to come and go until they are stopped.
  bool exit_when_done = true;
  // How long a stop may take: a SIGTERM's drain (requests in flight answered,
  // queued checkpoints written) and, at the job's end, the final checkpoint
  // and the servers' exit. Set Kubernetes' terminationGracePeriodSeconds
  // (and Slurm's KillWait) at least this long.
  absl::Duration shutdown_grace = absl::Seconds(30);
};

// The cluster.state_dir value that turns persistence off.
inline constexpr char kNoStateDir[] = "none";

// "continue" or "fail", as the YAML spells it.
const char* WorkerLossPolicyName(WorkerLossPolicy policy);

struct RpcConfig {
  int64_t max_message_bytes = 256ll << 20;   // gRPC send/receive limit, both sides
  int64_t request_split_bytes = 1ll << 20;   // client cuts requests above this
  absl::Duration deadline = absl::Seconds(60);  // every RPC, and the pull wait
  // Same-host path (docs/shared-memory.md): a worker offers each server a
  // shared-memory region of this size for values; a server on another host
  // (or one that cannot open it) refuses and values go through gRPC.
  bool shared_memory = true;
  int64_t shared_memory_bytes = 64ll << 20;
  // Requests whose values go through a region are cut at this many value
  // bytes instead of request_split_bytes: only their keys travel through
  // gRPC, and fewer, larger requests save round trips. Unset: 2 MiB, at
  // most half of max_message_bytes and a quarter of shared_memory_bytes,
  // and at least request_split_bytes.
  int64_t shared_memory_split_bytes = 2ll << 20;
  // Requests of one pull or push in flight to one server at a time
  // (ClientOptions::requests_in_flight); 0: all at once.
  int requests_in_flight = 4;
  // Threads of a server that serve its calls, all on one completion queue
  // (common/completion_loop.h). One is the fastest per call (no thread
  // hands gRPC's polling to another); more apply pushes from many workers
  // at once on a server with cores to spare.
  int server_threads = 1;
  // How long a thread that waits for a call polls for it without sleeping
  // before it sleeps (common/busy_poll.h): a worker waiting for its answer,
  // a server's threads after each call they served. Zero: off. Unset
  // (`auto`, the default): cairn-launch sets 2 ms for every process of its
  // job; a daemon started otherwise takes `auto` as off.
  std::optional<absl::Duration> busy_poll;
  // Same-host pushes through a call slot in the region instead of a gRPC
  // call while both sides poll (common/call_slot.h; docs/shared-memory.md,
  // "Calls through the region"); needs shared_memory, busy_poll above zero
  // on both sides and one server thread.
  bool call_slots = true;
  // rpc.push_ack: when a server answers a push through gRPC that has no
  // tick, no riding pull and no backup to reach (SSP or ASP): "accepted"
  // (the default), once checked and recorded, its update done after the
  // answer left and before anything reads what it changes (Shard::Push);
  // "applied", once applied. Any other push is answered once applied (and,
  // with backups, once they have it).
  std::string push_ack = "accepted";
};

// The longest rpc.busy_poll: a thread polls for at most this long per wait.
inline constexpr absl::Duration kMaxBusyPoll = absl::Milliseconds(100);

// Default chunk size of a dense table, in float32 elements (64 KiB).
inline constexpr int64_t kDefaultChunkSize = 16384;

// Chunk size a dense table of `num_elements` floats gets when its config sets
// none: min(kDefaultChunkSize, num_elements), at least 1, so a small table is
// one chunk of exactly its size.
int64_t DefaultChunkSize(int64_t num_elements);

// The optimizer a table or the model gets when the config names none: SGD,
// learning rate 0.1, no momentum, no weight decay.
v1::OptimizerSpec DefaultOptimizerSpec();

// The ctr model's embedding tables (training.embedding): one sparse table
// per categorical field, "ctr.c1" .. "ctr.c26".
struct EmbeddingConfig {
  int width = 8;               // floats per row
  int64_t min_count = 1;       // TableSpec.min_count (admission)
  int64_t capacity_rows = 0;   // TableSpec.capacity_rows (0: no bound)
  double evict_to = 0.9;       // TableSpec.evict_to
  std::string eviction = "lru";  // TableSpec.eviction: "lru" or "lfu"
  bool cold_tier = false;      // TableSpec.cold_tier
  int64_t ttl_clocks = 0;      // TableSpec.ttl_clocks (0: rows never expire)
  double init_scale = 0.01;    // rows start from N(0, init_scale^2)
};

// The ctr model reads Criteo-format data: 13 integer features and 26
// categorical fields (worker/trainer/criteo_reader.h).
inline constexpr int kCtrIntegerFeatures = 13;
inline constexpr int kCtrFields = 26;

// The ctr model's head input: width floats per categorical field, then the
// 13 integer features.
int CtrHeadInputs(int embedding_width);

struct TrainingConfig {
  // mlp: Fashion-MNIST classifier; ctr: click-through rate on Criteo-format
  // data (embedding tables + MLP head).
  std::string model = "mlp";
  // Sizes from the input to the output: mlp [784, ..., 10]; ctr
  // [CtrHeadInputs(width), ..., 1].
  std::vector<int> layers = {784, 256, 128, 10};
  EmbeddingConfig embedding;  // ctr only
  int batch_size = 64;
  int epochs = 5;
  int64_t max_steps = 0;           // 0: no cap; else stop after this many steps
  uint64_t seed = 1;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string device = "auto";     // auto | cpu | cuda
  double slowdown = 1.0;           // straggler factor (>= 1)
  v1::OptimizerSpec optimizer = DefaultOptimizerSpec();  // for the model's tables
  // How the model's tables travel (fp32 | bf16 | fp16; TableSpec.wire_dtype).
  v1::DType wire_dtype = v1::DTYPE_FLOAT32;
};

struct MetricsConfig {
  std::string host = "127.0.0.1";  // /metrics listen host
  int port = 0;                    // 0: pick a free port
  bool tls = false;                // HTTPS with the process's TLS certificate (security:)
};

// Transport security (docs/security.md): mutual TLS on every gRPC channel
// of the job. Each path may contain "{role}", replaced by the reading
// process's role (worker, server, coordinator, admin), so one file serves
// every process; flags and environment variables override them per process
// (common/security/security_settings.h).
struct SecurityConfig {
  bool tls = false;                // off: plaintext (a local job)
  std::string ca_file;             // PEM bundle of the CAs peers are verified against
  std::string cert_file;           // this process's certificate chain (PEM)
  std::string key_file;            // its private key (PEM)
  std::string tokens_file;         // servers, coordinator: the bearer tokens accepted
  absl::Duration reload_every = absl::Seconds(10);  // how often the files are re-read
};

// Periodic checkpoints (docs/design.md, Checkpoints). Each server keeps one
// RocksDB store under `dir`; a checkpoint is taken every `every_clocks`
// clocks and/or every `every`, whichever comes first; the newest `keep` are
// kept. Empty `dir` with neither trigger set: no periodic checkpoints.
struct CheckpointConfig {
  std::string dir;                                // where the servers' stores live
  int64_t every_clocks = 0;                       // 0: not by clock
  absl::Duration every = absl::ZeroDuration();    // zero: not by time
  int keep = 3;                                   // newest checkpoints kept (>= 1)
  // "none", "latest" or a clock: the complete checkpoint the job resumes from.
  std::string resume = "none";
  std::string init_from;                          // .safetensors of initial values
};

struct JobConfig {
  std::string path;                // the YAML file it came from
  std::string source;              // the file's text, as read
  std::vector<std::string> overrides;  // "key.path=value" applied on top, in order
  std::string config_hash;         // 16 hex digits; see ConfigHash()
  ClusterConfig cluster;
  RpcConfig rpc;
  v1::Consistency consistency = v1::CONSISTENCY_BSP;  // job-wide default
  int64_t staleness = 0;           // job-wide default bound for SSP
  std::vector<v1::TableSpec> tables;  // explicit tables, then the model's (ids set)
  bool has_training = false;       // a `training:` section was given
  TrainingConfig training;
  MetricsConfig metrics;
  CheckpointConfig checkpoint;
  SecurityConfig security;
};

// Parses `yaml` (named `file_name` in errors), then applies `overrides`
// ("consistency.staleness=2", "tables[emb].width=32"; see overrides.h) onto
// the YAML tree and validates the result. InvalidArgument naming
// file:line:column (or the override) and the key path on any bad input.
absl::StatusOr<JobConfig> ParseJobConfig(const std::string& yaml, const std::string& file_name,
                                         const std::vector<std::string>& overrides = {});

// Reads and parses `path`, as ParseJobConfig. NotFound when the file is
// missing; InvalidArgument naming the path when it cannot be read.
absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path,
                                        const std::vector<std::string>& overrides = {});

// XXH64 (seed 0) of `source` in 16 lowercase hex digits; with overrides, of
// `source` followed by "\n--set <override>" for each, in order. Processes that
// print the same hash run the same effective configuration.
std::string ConfigHash(const std::string& source, const std::vector<std::string>& overrides);

// What a server or worker (`process`, e.g. "server 2") running `source` with
// `overrides` logs when its config differs from the coordinator's, whose
// hash is `coordinators` (RegisterServerResponse / RegisterWorkerResponse
// job.config_hash): another file or other --set overrides. The
// coordinator's own --resume (checkpoint.resume=latest, last of its
// overrides; only the coordinator reads it) does not count. Empty when they
// match or `coordinators` is unknown (empty).
std::string ConfigHashMismatch(absl::string_view process, const std::string& source,
                               const std::vector<std::string>& overrides,
                               const std::string& coordinators);

// The tables the MLP of `training` needs: for layer i (in -> out):
// "mlp.fc<i>.weight" dense [out, in] (he_uniform, seed) and
// "mlp.fc<i>.bias" dense [out] (zeros), with training.optimizer, the default
// chunk size, non_finite reject, aggregation mean and the given consistency
// (the job default when called by the parser). ids are 0, 1, ... in order.
std::vector<v1::TableSpec> ModelTables(const TrainingConfig& training,
                                       v1::Consistency consistency = v1::CONSISTENCY_BSP,
                                       int64_t staleness = 0);

// The part of the config every process must agree on, as the coordinator serves it.
v1::JobSpec ToJobSpec(const JobConfig& config);

// Human-readable effective configuration, one "key: value" line per setting,
// keys spelled as in the YAML file ("cluster.lease_timeout: 5s",
// "tables[0].optimizer.learning_rate: 0.1"), every default filled in (for
// --print-config and the start-up log).
std::string DescribeConfig(const JobConfig& config);

// ParseDuration and ParseSize are declared in common/config/units.h.

}  // namespace cairn

#endif  // CAIRN_COMMON_CONFIG_JOB_CONFIG_H_
