// cairn-worker: trains the job's model (training.model: an MLP on
// Fashion-MNIST, or the ctr model on Criteo-format data) either alone
// (--local, no servers) or as one worker of a Cairn job.
//
// Exit codes (as every Cairn binary): 0 done; 1 training failed; 2 bad flags,
// config, data or device; 3 the metrics port is taken; 4 the coordinator is
// unreachable or the start-up barrier timed out; 5 the cluster (coordinator or
// servers) was lost while training.
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/config/job_config.h"
#include "common/config/security_settings.h"
#include "common/cpu_affinity.h"
#include "common/daemon.h"
#include "common/identity.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "kernels/backend.h"
#include "worker/trainer/criteo_reader.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/ctr_store.h"
#include "worker/trainer/ctr_trainer.h"
#include "worker/trainer/idx_loader.h"
#include "worker/trainer/local_trainer.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/model_tables_binding.h"
#include "worker/trainer/progress_reporter.h"
#include "worker/trainer/summary_json.h"
#include "worker/trainer/trainer.h"
#include "worker/trainer/worker_metrics.h"

#ifdef CAIRN_WORKER_HAS_CLIENT
#include "cairn/v1/types.pb.h"
#include "worker/client/client.h"
#include "worker/trainer/ps_ctr_store.h"
#include "worker/trainer/ps_trainer.h"
#endif

namespace cairn {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitConfig = 2;
constexpr int kExitPortTaken = 3;
constexpr int kExitUnreachable = 4;
constexpr int kExitLost = 5;
constexpr int kEvalBatch = 1000;  // examples per forward pass when evaluating

struct Flags {
  std::string config;
  bool local = false;
  int worker_id = -1;
  std::string log_level = "info";
  std::string summary;
  int trace_loss = 0;
  double progress_interval_seconds = 10;  // between progress lines when not on a terminal
  std::vector<std::string> overrides;  // from the flags that override the config
  // `overrides` less those of --coordinator and --metrics-port, which say
  // where this process is rather than how the job runs: the config hash
  // covers these (docs/config.md), so every process of a job logs one hash.
  std::vector<std::string> job_overrides;
  SecurityFlags security;
};

// Prints one line "cairn-worker: <message>" and returns `code`.
int Fail(int code, const absl::Status& status) {
  const std::string message = absl::StrReplaceAll(status.message(), {{"\n", "; "}});
  std::fprintf(stderr, "cairn-worker: %s\n", message.c_str());
  return code;
}

// For errors while setting up: bad input is the config's fault.
int SetupExitCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
      return kExitConfig;
    default:
      return kExitFailed;
  }
}

// For errors while training: losing the cluster is 5, anything else 1.
int TrainingExitCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return kExitLost;
    case absl::StatusCode::kCancelled:  // the coordinator ended the job as failed
      return kExitJobFailed;
    default:
      return kExitFailed;
  }
}

struct Session {
  JobConfig config;
  std::unique_ptr<Backend> backend;
  // model: mlp
  FashionMnist data;
  std::unique_ptr<Mlp> mlp;
  // model: ctr
  CriteoData ctr_train;
  CriteoData ctr_test;
  std::unique_ptr<CtrModel> ctr;
  std::vector<v1::TableSpec> ctr_fields;  // the embedding tables, field order
  // The dense tables bound to the MLP's (the ctr head's) flat layout.
  std::vector<BoundTable> tables;
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<ProgressReporter> progress;
#ifdef CAIRN_WORKER_HAS_CLIENT
  std::unique_ptr<Client> client;  // cluster mode: registered before the data loads
#endif
};

// Also sets up the console progress (a bar on a terminal, logfmt lines
// otherwise) on stderr, beside the log.
TrainerOptions MakeTrainerOptions(Session& s, const Flags& flags, int worker, int workers) {
  const TrainingConfig& t = s.config.training;
  TrainerOptions o;
  o.epochs = t.epochs;
  o.max_steps = t.max_steps;
  o.batch_size = t.batch_size;
  o.seed = t.seed;
  o.worker = worker;
  o.num_workers = workers;
  o.slowdown = t.slowdown;
  o.trace_loss_steps = flags.trace_loss;
  ProgressBar::Options bar;
  bar.label = flags.local ? "local" : absl::StrCat("worker ", worker);
  bar.log_interval = absl::Seconds(flags.progress_interval_seconds);
  winsize terminal{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &terminal) == 0 && terminal.ws_col > 0) {
    bar.width = terminal.ws_col;  // $COLUMNS is seldom exported
  }
  s.progress = std::make_unique<ProgressReporter>(stderr, bar, t.epochs);
  WorkerMetrics* m = s.metrics.get();  // null without a metrics server
  ProgressReporter* progress = s.progress.get();
  o.on_step = [m, progress](const StepRecord& r) {
    if (m != nullptr) m->RecordStep(r);
    progress->OnStep(r);
  };
  if (m != nullptr) o.on_epoch = [m](const EpochStats& e) { m->RecordEpoch(e); };
  return o;
}

int Finish(const Session& s, const Flags& flags, const TrainingSummary& summary,
           const RunInfo& run) {
  LOG_INFO(
      "done: {} steps, {} examples, train_loss {:.4f}, test_loss {:.4f}, test_accuracy {:.4f}{}, "
      "{:.0f} examples/s, {:.1f}s",
      summary.steps, summary.examples, summary.train_loss, summary.test_loss,
      summary.test_accuracy,
      summary.test_auc >= 0 ? absl::StrCat(", test_auc ", summary.test_auc) : "",
      summary.examples_per_second, summary.wall_seconds);
  if (!flags.summary.empty()) {
    absl::Status written = WriteSummaryJson(flags.summary, summary, run);
    if (!written.ok()) return Fail(kExitFailed, written);
  }
  ExitNow(kExitOk);  // training is over and its summary written
}

// Trains the session's model through a store of this process.
absl::StatusOr<TrainingSummary> TrainLocal(Session& s, const TrainerOptions& options) {
  if (s.ctr != nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<LocalCtrStore> store,
                     LocalCtrStore::Create(s.tables, s.ctr->head().num_params(), s.ctr_fields));
    return TrainCtr(*s.ctr, *store, s.ctr_train, s.ctr_test, options);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LocalParameterStore> store,
                   LocalParameterStore::Create(s.tables, s.mlp->num_params()));
  return Train(*s.mlp, *store, s.data.train, s.data.test, options);
}

int RunLocal(Session& s, const Flags& flags) {
  absl::StatusOr<TrainingSummary> summary = TrainLocal(s, MakeTrainerOptions(s, flags, 0, 1));
  s.progress->Finish();  // before any message, so it starts on a line of its own
  if (!summary.ok()) return Fail(TrainingExitCode(summary.status()), summary.status());
  return Finish(s, flags, *summary,
                RunInfo{"local", s.backend->Describe(), 0, 1, s.config.training.batch_size,
                        FormatCpuList(AllowedCpus())});
}

#ifdef CAIRN_WORKER_HAS_CLIENT
// Registers with the coordinator first, before the data and the model load,
// so that a refused index (ALREADY_EXISTS: another live worker holds it),
// an index out of range or a coordinator that cannot be reached ends the
// process within seconds. Returns 0 or the exit code.
int ConnectToCluster(Session& s, const Flags& flags) {
  const EnvLookup env = ProcessEnv();
  // --coordinator (or --set cluster.coordinator=) is already in the config.
  const bool coordinator_flag =
      std::any_of(flags.overrides.begin(), flags.overrides.end(), [](const std::string& o) {
        return o.rfind("cluster.coordinator=", 0) == 0;
      });
  absl::StatusOr<Sourced> coordinator = ResolveCoordinator(
      coordinator_flag ? s.config.cluster.coordinator : "", s.config.cluster.coordinator, env);
  if (!coordinator.ok()) return Fail(kExitConfig, coordinator.status());
  absl::StatusOr<ResolvedIndex> index =
      ResolveIndex("worker", flags.worker_id, "--worker-id", s.config.cluster.workers, env);
  if (!index.ok()) return Fail(kExitConfig, index.status());
  if (!index->source.empty()) LOG_INFO("worker index {} from {}", index->index, index->source);
  if (absl::Status resolved =
          WaitUntilResolvable(coordinator->value, coordinator->source, absl::Seconds(10));
      !resolved.ok()) {
    return Fail(kExitUnreachable, resolved);
  }
  ClientOptions options;
  options.coordinator = coordinator->value;
  options.worker_id = index->index;
  options.connect_timeout = s.config.cluster.startup_timeout;
  options.rpc_deadline = s.config.rpc.deadline;
  options.requests_in_flight = s.config.rpc.requests_in_flight;
  // `auto` left unresolved (not started by cairn-launch): off.
  options.busy_poll = s.config.rpc.busy_poll.value_or(absl::ZeroDuration());
  options.call_slots = s.config.rpc.call_slots;
  if (s.metrics_server != nullptr) {
    options.metrics_address = DialableAddress(s.metrics_server->address(), OwnHost(env));
    options.metrics_registry = &s.metrics_server->registry();  // cairn_client_* metrics
  }
  LOG_INFO("connecting to coordinator {} (busy polling {}); waiting up to {} "
           "(cluster.startup_timeout) for it and the start-up barrier",
           options.coordinator,
           options.busy_poll > absl::ZeroDuration() ? absl::FormatDuration(options.busy_poll)
                                                    : "off",
           absl::FormatDuration(options.connect_timeout));
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!client.ok()) {
    const absl::Status& st = client.status();
    // A certificate of another role is configuration: no retry helps.
    return Fail(absl::IsInvalidArgument(st) || absl::IsPermissionDenied(st) ||
                        absl::IsUnauthenticated(st)
                    ? kExitConfig
                : absl::IsAlreadyExists(st)        ? kExitIndexTaken
                : absl::IsFailedPrecondition(st) || absl::IsCancelled(st) ? kExitJobFailed
                                                   : kExitUnreachable,
                st);
  }
  s.client = *std::move(client);
  LOG_INFO("worker {} of {}", s.client->worker_id(), s.client->job().num_workers());
  if (const std::string differs =
          ConfigHashMismatch(absl::StrCat("worker ", s.client->worker_id()), s.config.source,
                             flags.job_overrides, s.client->job().config_hash());
      !differs.empty()) {
    LOG_WARN("{}", differs);
  }
  return kExitOk;
}
#endif

#ifdef CAIRN_WORKER_HAS_CLIENT
// Trains the session's model through Cairn's servers. The store's errors
// (the job's tables differ from the model's) are the config's: *setup_failed.
absl::StatusOr<TrainingSummary> TrainWithCluster(Session& s, const TrainerOptions& options,
                                                 bool* setup_failed) {
  *setup_failed = true;
  if (s.ctr != nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<PsCtrStore> store,
                     PsCtrStore::Create(s.client.get(), s.tables, s.ctr->head().num_params(),
                                        s.ctr_fields));
    *setup_failed = false;
    return TrainCtr(*s.ctr, *store, s.ctr_train, s.ctr_test, options);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PsParameterStore> store,
                   PsParameterStore::Create(s.client.get(), s.tables, s.mlp->num_params(),
                                            /*in_shared_memory=*/true));
  *setup_failed = false;
  return Train(*s.mlp, *store, s.data.train, s.data.test, options);
}
#endif

int RunWithCluster(Session& s, const Flags& flags) {
#ifdef CAIRN_WORKER_HAS_CLIENT
  const int worker = static_cast<int>(s.client->worker_id());
  const int workers = static_cast<int>(s.client->job().num_workers());
  bool setup_failed = false;
  absl::StatusOr<TrainingSummary> summary =
      TrainWithCluster(s, MakeTrainerOptions(s, flags, worker, workers), &setup_failed);
  if (setup_failed) return Fail(kExitConfig, summary.status());
  s.progress->Finish();  // before any message, so it starts on a line of its own
  if (!summary.ok()) return Fail(TrainingExitCode(summary.status()), summary.status());
  absl::Status left = s.client->Finish();
  if (!left.ok()) LOG_WARN("leaving the job: {}", left.ToString());
  return Finish(
      s, flags, *summary,
      RunInfo{"ps", s.backend->Describe(), worker, workers, s.config.training.batch_size,
              FormatCpuList(AllowedCpus())});
#else
  return Fail(kExitConfig, absl::FailedPreconditionError(
                               "this cairn-worker was built without the Cairn client library; "
                               "only --local is available"));
#endif
}

// model: mlp. Loads Fashion-MNIST and builds the MLP and its tables. On an
// error, *exit_code says what it means: bad data or config (2), or a
// device failure (SetupExitCode).
absl::Status LoadMlp(Session& s, int* exit_code) {
  const TrainingConfig& t = s.config.training;
  *exit_code = kExitConfig;
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(t.data_dir);
  if (!data.ok()) return Annotate(data.status(), "training.data_dir");
  s.data = *std::move(data);
  LOG_INFO("data {}: {} training and {} test examples", t.data_dir, s.data.train.size,
           s.data.test.size);
  absl::StatusOr<std::unique_ptr<Mlp>> mlp =
      Mlp::Create(s.backend.get(), t.layers, std::max(t.batch_size, kEvalBatch));
  if (!mlp.ok()) *exit_code = SetupExitCode(mlp.status());
  RETURN_IF_ERROR(mlp.status());
  s.mlp = *std::move(mlp);
  *exit_code = kExitConfig;
  ASSIGN_OR_RETURN(s.tables, BindModelTables(*s.mlp, ModelTables(t, s.config.consistency,
                                                                 s.config.staleness)));
  return absl::OkStatus();
}

// model: ctr. Reads <data_dir>/train.txt and test.txt (Criteo format) and
// builds the model, its head's tables and its embedding tables.
absl::Status LoadCtr(Session& s, int* exit_code) {
  const TrainingConfig& t = s.config.training;
  *exit_code = kExitConfig;
  for (auto [file, into] : {std::pair{"/train.txt", &s.ctr_train}, {"/test.txt", &s.ctr_test}}) {
    absl::StatusOr<CriteoData> read = ReadCriteo(t.data_dir + file);
    if (!read.ok()) return Annotate(read.status(), "training.data_dir");
    *into = *std::move(read);
  }
  LOG_INFO("data {}: {} training and {} test examples (Criteo format)", t.data_dir,
           s.ctr_train.size, s.ctr_test.size);
  absl::StatusOr<std::unique_ptr<CtrModel>> model = CtrModel::Create(
      s.backend.get(), t.layers, t.embedding.width, std::max(t.batch_size, kEvalBatch));
  if (!model.ok()) *exit_code = SetupExitCode(model.status());
  RETURN_IF_ERROR(model.status());
  s.ctr = *std::move(model);
  *exit_code = kExitConfig;
  std::vector<v1::TableSpec> head;
  for (v1::TableSpec& table : ModelTables(t, s.config.consistency, s.config.staleness)) {
    (table.kind() == v1::TABLE_KIND_SPARSE ? s.ctr_fields : head).push_back(std::move(table));
  }
  ASSIGN_OR_RETURN(s.tables, BindModelTables(s.ctr->head(), head));
  return absl::OkStatus();
}

// What can be checked before registering without reading the data: its
// files are there, and the model's first and last layers fit them. A worker
// that cannot train then fails alone, naming the setting, instead of
// holding a place in the job until its lease runs out; the data itself
// loads after registering, outside the start-up barrier's time.
absl::Status CheckBeforeRegistering(const TrainingConfig& t) {
  const bool ctr = t.model == "ctr";
  const std::vector<std::string> files =
      ctr ? std::vector<std::string>{"train.txt", "test.txt"}
          : std::vector<std::string>{kFashionMnistTrainImages, kFashionMnistTrainLabels,
                                     kFashionMnistTestImages, kFashionMnistTestLabels};
  for (const std::string& file : files) {
    const std::string path = t.data_dir + "/" + file;
    if (::access(path.c_str(), R_OK) != 0) {
      const int err = errno;
      return absl::NotFoundError(absl::StrCat(
          "training.data_dir: ", path, ": ", err == ENOENT ? "no such file" : std::strerror(err)));
    }
  }
  constexpr int kInputs = kFashionMnistSide * kFashionMnistSide;
  if (!ctr && (t.layers.front() != kInputs || t.layers.back() != kFashionMnistClasses)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.layers: [", absl::StrJoin(t.layers, ", "), "] must start with the ", kInputs,
        " inputs and end with the ", kFashionMnistClasses,
        " classes of the examples in training.data_dir (Fashion-MNIST: ", kFashionMnistSide,
        " x ", kFashionMnistSide, " pixels)"));
  }
  return absl::OkStatus();
}

int Run(const Flags& flags) {
  Session s;
  absl::StatusOr<JobConfig> config = LoadJobConfig(flags.config, flags.overrides);
  if (!config.ok()) return Fail(kExitConfig, config.status());
  s.config = *std::move(config);
  s.config.config_hash = ConfigHash(s.config.source, flags.job_overrides);
  if (!s.config.has_training) {
    return Fail(kExitConfig, absl::InvalidArgumentError(absl::StrCat(
                                 flags.config, ": no training: section; cairn-worker needs one")));
  }
  if (!flags.local) {
    if (absl::Status st = SetUpTransportSecurity(s.config.security, flags.security, ProcessEnv(),
                                                 Role::kWorker);
        !st.ok()) {
      return Fail(kExitConfig, st);
    }
  }
  const TrainingConfig& t = s.config.training;
  LOG_INFO("config {} (hash {}): {} mode, layers {}, batch {}, epochs {}, max_steps {}, seed {}",
           flags.config, s.config.config_hash, flags.local ? "local" : "cluster",
           absl::StrJoin(t.layers, "-"), t.batch_size, t.epochs, t.max_steps, t.seed);

  const bool metrics_flag =
      std::any_of(flags.overrides.begin(), flags.overrides.end(),
                  [](const std::string& o) { return o.rfind("metrics.", 0) == 0; });
  if (!flags.local || metrics_flag) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> server =
        MetricsServer::Start(s.config.metrics.host, s.config.metrics.port, "worker",
                             s.config.metrics.tls);
    if (!server.ok()) {
      return Fail(
          server.status().code() == absl::StatusCode::kUnavailable ? kExitPortTaken : kExitConfig,
          server.status());
    }
    s.metrics_server = *std::move(server);
    s.metrics = std::make_unique<WorkerMetrics>(s.metrics_server->registry());
    LOG_INFO("metrics on {}", s.metrics_server->url());
  }
  if (absl::Status checked = CheckBeforeRegistering(t); !checked.ok()) {
    return Fail(kExitConfig, checked);
  }
#ifdef CAIRN_WORKER_HAS_CLIENT
  if (!flags.local) {
    if (const int code = ConnectToCluster(s, flags); code != kExitOk) return code;
  }
#endif

  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeBackend(t.device);
  if (!backend.ok()) return Fail(SetupExitCode(backend.status()), backend.status());
  s.backend = *std::move(backend);
  LOG_INFO("device {}, on CPUs {}", s.backend->Describe(), FormatCpuList(AllowedCpus()));

  int load_failed = kExitConfig;  // what a failure to load means
  const absl::Status loaded =
      t.model == "ctr" ? LoadCtr(s, &load_failed) : LoadMlp(s, &load_failed);
  if (!loaded.ok()) return Fail(load_failed, loaded);

  return flags.local ? RunLocal(s, flags) : RunWithCluster(s, flags);
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  cairn::TuneDaemonAllocator();
  cairn::DisableMutexDeadlockDetection();
  cairn::Flags flags;
  CLI::App app{
      "cairn-worker: trains the job's model (training.model: the MLP on Fashion-MNIST, or the "
      "click-through-rate model on Criteo-format data), alone (--local) or as a worker of a "
      "Cairn job"};
  app.footer(
      "--set and the flags marked \"overrides\" change the config file's values.\n"
      "Exit codes: 0 done; 1 training failed; 2 bad flags, config, data or device; 3 metrics "
      "port taken; 4 coordinator unreachable, its name unresolved, or start-up barrier timed "
      "out; 5 cluster lost; 10 the coordinator ended the job as failed; 11 the worker index is "
      "held by a live worker. docs/deploy.md, \"Exit codes\".");
  app.add_option("--config", flags.config, "job YAML file")->required();
  app.add_flag("--local", flags.local, "train in this process, without servers");
  app.add_option("--worker-id", flags.worker_id,
                 "worker id to ask for (default: $CAIRN_INDEX, $JOB_COMPLETION_INDEX, the "
                 "StatefulSet ordinal, $SLURM_PROCID - $CAIRN_INDEX_OFFSET, else assigned; "
                 "docs/deploy.md)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--summary", flags.summary, "write a JSON summary here when done");
  app.add_option("--trace-loss", flags.trace_loss, "keep the first N step losses in the summary")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--progress-interval", flags.progress_interval_seconds,
                 "seconds between progress lines when stderr is not a terminal (on a terminal "
                 "a progress bar is drawn instead)")
      ->check(CLI::PositiveNumber)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  cairn::AddSecurityFlags(&app, &flags.security, cairn::Role::kWorker);
  // Each of these becomes a config override ("training.epochs=3"), so it is
  // checked exactly as the same key in the YAML file would be.
  const std::vector<std::pair<std::string, std::string>> override_flags = {
      {"--coordinator", "cluster.coordinator"}, {"--device", "training.device"},
      {"--data-dir", "training.data_dir"},      {"--epochs", "training.epochs"},
      {"--max-steps", "training.max_steps"},    {"--batch-size", "training.batch_size"},
      {"--slowdown", "training.slowdown"},      {"--metrics-port", "metrics.port"}};
  std::vector<std::string> sets;
  app.add_option("--set", sets,
                 "config override key.path=value, applied on top of the file (repeatable), "
                 "e.g. --set training.optimizer.learning_rate=0.05");
  std::vector<std::string> values(override_flags.size());
  for (size_t i = 0; i < override_flags.size(); ++i) {
    app.add_option(override_flags[i].first, values[i], "overrides " + override_flags[i].second);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : cairn::kExitConfig;
  }
  flags.overrides = sets;  // first, so the dedicated flags below win
  flags.job_overrides = sets;
  for (size_t i = 0; i < override_flags.size(); ++i) {
    if (app.count(override_flags[i].first) > 0) {
      std::string set = override_flags[i].second + "=" + values[i];
      const bool placement =
          override_flags[i].first == "--coordinator" || override_flags[i].first == "--metrics-port";
      if (!placement) flags.job_overrides.push_back(set);
      flags.overrides.push_back(std::move(set));
    }
  }
  cairn::InitLogging("worker", flags.log_level);
  return cairn::Run(flags);
}
