// The --local path: parameters from the tables' initializers, updates by the
// server-side optimizers, and the training loop on synthetic and real data.
#include "worker/trainer/local_trainer.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include "cairn/v1/types.pb.h"
#include "common/config/job_config.h"
#include "common/initializer.h"
#include "kernels/cpu_backend.h"
#include "worker/trainer/idx_loader.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/model_tables_binding.h"
#include "worker/trainer/trainer.h"

namespace cairn {
namespace {

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

struct Model {
  CpuBackend backend;
  std::unique_ptr<Mlp> mlp;
  std::vector<BoundTable> tables;
};

std::unique_ptr<Model> MakeModel(const TrainingConfig& t, int max_batch) {
  auto m = std::make_unique<Model>();
  absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(&m->backend, t.layers, max_batch);
  REQUIRE(mlp.ok());
  m->mlp = *std::move(mlp);
  absl::StatusOr<std::vector<BoundTable>> tables = BindModelTables(*m->mlp, ModelTables(t));
  REQUIRE(tables.ok());
  m->tables = *std::move(tables);
  return m;
}

// n examples of `features` floats in `classes` well-separated clusters:
// class c has feature c % features raised by 1, plus noise in [0, 0.3).
Dataset Clusters(int64_t n, int features, int classes, unsigned seed) {
  Dataset d;
  d.size = n;
  d.features = features;
  d.num_classes = classes;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(0.0f, 0.3f);
  for (int64_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % classes);
    for (int f = 0; f < features; ++f) d.images.push_back(noise(rng) + (f == c ? 1.0f : 0.0f));
    d.labels.push_back(c);
  }
  return d;
}

TEST_CASE("the local store starts from the tables' initial values", "[worker][local]") {
  TrainingConfig t;
  t.layers = {5, 4, 3};
  t.seed = 17;
  std::unique_ptr<Model> m = MakeModel(t, 4);
  absl::StatusOr<std::unique_ptr<LocalParameterStore>> store =
      LocalParameterStore::Create(m->tables, m->mlp->num_params());
  REQUIRE(store.ok());
  absl::StatusOr<absl::Span<const float>> params = (*store)->Pull();
  REQUIRE(params.ok());
  for (const BoundTable& table : m->tables) {
    std::vector<float> expected(table.size);
    InitDenseElements(table.spec, 0, absl::MakeSpan(expected));
    CHECK(std::vector<float>(params->begin() + table.offset,
                             params->begin() + table.offset + table.size) == expected);
  }
  // he_uniform weights are not all zero; biases are.
  CHECK(std::any_of(params->begin(), params->begin() + 20, [](float v) { return v != 0; }));
  CHECK(std::all_of(params->begin() + 20, params->begin() + 24, [](float v) { return v == 0; }));
}

TEST_CASE("the local store applies the tables' optimizer with the update count as step",
          "[worker][local]") {
  TrainingConfig t;
  t.layers = {2, 2};
  SECTION("plain SGD: w -= lr * g, then again") {
    t.optimizer.set_kind(v1::OPTIMIZER_KIND_SGD);
    t.optimizer.set_learning_rate(0.5f);
    std::unique_ptr<Model> m = MakeModel(t, 1);
    auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
    const std::vector<float> w0((*store->Pull()).begin(), (*store->Pull()).end());
    const std::vector<float> g = {1, 2, 3, 4, -1, -2};
    REQUIRE(store->PushAndClock(g).ok());
    REQUIRE(store->PushAndClock(g).ok());
    absl::Span<const float> w2 = *store->Pull();
    for (size_t i = 0; i < g.size(); ++i) CHECK(w2[i] == (w0[i] - 0.5f * g[i]) - 0.5f * g[i]);
    CHECK(store->updates() == 2);
  }
  SECTION("Adam's first step moves each weight by lr * g / (|g| + eps)") {
    t.optimizer.set_kind(v1::OPTIMIZER_KIND_ADAM);
    t.optimizer.set_learning_rate(0.01f);
    t.optimizer.set_beta1(0.9f);
    t.optimizer.set_beta2(0.999f);
    t.optimizer.set_epsilon(1e-8f);
    std::unique_ptr<Model> m = MakeModel(t, 1);
    auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
    const std::vector<float> w0((*store->Pull()).begin(), (*store->Pull()).end());
    const std::vector<float> g = {1, -2, 3, -4, 0.5f, -0.5f};
    REQUIRE(store->PushAndClock(g).ok());
    absl::Span<const float> w1 = *store->Pull();
    // With step = 1 the bias corrections cancel (1 - beta) exactly: a step of
    // lr * sign(g). Without them (step 0 or a wrong count) it would be 10x smaller.
    for (size_t i = 0; i < g.size(); ++i) {
      CHECK_THAT(w1[i], WithinAbs(w0[i] - 0.01f * (g[i] > 0 ? 1 : -1), 1e-6));
    }
  }
  SECTION("a wrongly sized push is rejected") {
    std::unique_ptr<Model> m = MakeModel(t, 1);
    auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
    CHECK(store->PushAndClock(std::vector<float>(5)).code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("the mean of W workers' gradients is the gradient of their joint batch",
          "[worker][local]") {
  // What BSP with aggregation mean relies on: W workers with batch b train as
  // one worker with batch W * b.
  TrainingConfig t;
  t.layers = {6, 5, 3};
  std::unique_ptr<Model> m = MakeModel(t, 8);
  std::vector<float> params(m->mlp->num_params());
  InitParameters(m->tables, absl::MakeSpan(params));
  const Dataset d = Clusters(8, 6, 3, 5);
  std::vector<float> joint(params.size()), a(params.size()), b(params.size());
  REQUIRE(m->mlp->TrainStep(params, d.images, d.labels, absl::MakeSpan(joint)).ok());
  absl::Span<const float> x = d.images;
  absl::Span<const int32_t> y = d.labels;
  REQUIRE(m->mlp->TrainStep(params, x.subspan(0, 24), y.subspan(0, 4), absl::MakeSpan(a)).ok());
  REQUIRE(m->mlp->TrainStep(params, x.subspan(24), y.subspan(4), absl::MakeSpan(b)).ok());
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK_THAT((a[i] + b[i]) / 2, WithinAbs(joint[i], 1e-6));  // float32 rounding only
  }
}

// A {6, 16, 3} model and separable clusters: 960 training examples (30
// steps of batch 32 per epoch), 300 test ones.
struct ClusterJob {
  std::unique_ptr<Model> m;
  Dataset train;
  Dataset test;
};

ClusterJob MakeClusterJob() {
  TrainingConfig t;
  t.layers = {6, 16, 3};
  return ClusterJob{MakeModel(t, 64), Clusters(960, 6, 3, 1), Clusters(300, 6, 3, 2)};
}

TEST_CASE("local training on separable clusters lowers the loss and is reproducible",
          "[worker][local]") {
  const ClusterJob job = MakeClusterJob();
  Model* m = job.m.get();
  const Dataset& train = job.train;
  const Dataset& test = job.test;
  TrainerOptions o;
  o.epochs = 3;
  o.batch_size = 32;
  o.trace_loss_steps = 10;
  int64_t calls = 0;
  o.on_step = [&](const StepRecord&) { ++calls; };
  auto run = [&] {
    auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
    absl::StatusOr<TrainingSummary> s = Train(*m->mlp, *store, train, test, o);
    REQUIRE(s.ok());
    return *s;
  };
  const TrainingSummary first = run();
  CHECK(first.steps == 3 * 30);
  CHECK(calls == 90);
  CHECK(first.examples == 90 * 32);
  REQUIRE(first.epochs.size() == 3);
  CHECK(first.epochs[2].train_loss < 0.5 * first.epochs[0].train_loss);
  CHECK(first.test_accuracy > 0.95);
  CHECK(first.loss_trace.size() == 10);
  CHECK(first.examples_per_second > 0);
  const TrainingSummary second = run();
  CHECK(second.loss_trace == first.loss_trace);  // bit for bit
  CHECK(second.train_loss == first.train_loss);
}

// The local store, running `meanwhile` as a store on servers does while its
// push is in flight (after the update here: the values it must not touch are
// the gradient and the parameters, which the update reads and writes).
class MeanwhileStore final : public ParameterStore {
 public:
  explicit MeanwhileStore(ParameterStore& inner) : inner_(inner) {}
  absl::StatusOr<absl::Span<const float>> Pull() override { return inner_.Pull(); }
  absl::Status PushAndClock(absl::Span<const float> grads) override {
    return inner_.PushAndClock(grads);
  }
  absl::Status PushAndClock(absl::Span<const float> grads,
                            absl::FunctionRef<void()> meanwhile) override {
    absl::Status pushed = inner_.PushAndClock(grads);
    meanwhile();
    ++runs;
    return pushed;
  }
  int64_t runs = 0;

 private:
  ParameterStore& inner_;
};

TEST_CASE("the next batch gathered while the push is in flight trains the same bits",
          "[worker][local]") {
  const ClusterJob job = MakeClusterJob();
  Model& m = *job.m;
  TrainerOptions o;
  o.epochs = 2;
  o.batch_size = 32;
  o.trace_loss_steps = 60;
  auto local = *LocalParameterStore::Create(m.tables, m.mlp->num_params());
  absl::StatusOr<TrainingSummary> plain = Train(*m.mlp, *local, job.train, job.test, o);
  REQUIRE(plain.ok());
  auto inner = *LocalParameterStore::Create(m.tables, m.mlp->num_params());
  MeanwhileStore store(*inner);
  absl::StatusOr<TrainingSummary> ahead = Train(*m.mlp, store, job.train, job.test, o);
  REQUIRE(ahead.ok());
  // Every step but each epoch's last gathers the next batch meanwhile.
  CHECK(store.runs == 2 * 29);
  REQUIRE(ahead->loss_trace.size() == 60);
  CHECK(ahead->loss_trace == plain->loss_trace);  // bit for bit, across the epoch's end
  CHECK(ahead->test_accuracy == plain->test_accuracy);
  CHECK(inner->params() == local->params());
}

TEST_CASE("max_steps caps training and slowdown stretches compute", "[worker][local]") {
  TrainingConfig t;
  t.layers = {6, 16, 3};
  std::unique_ptr<Model> m = MakeModel(t, 64);
  const Dataset train = Clusters(960, 6, 3, 1), test = Clusters(30, 6, 3, 2);
  TrainerOptions o;
  o.epochs = 5;
  o.batch_size = 32;
  o.max_steps = 45;  // one and a half epochs
  o.slowdown = 3.0;
  auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
  absl::StatusOr<TrainingSummary> s = Train(*m->mlp, *store, train, test, o);
  REQUIRE(s.ok());
  CHECK(s->steps == 45);
  REQUIRE(s->epochs.size() == 2);
  CHECK(s->epochs[1].steps == 15);
  CHECK(store->updates() == 45);
  // Sleeps of 2x the compute time; sleeping never ends early.
  CHECK(s->time.slowdown >= 2.0 * s->time.compute * 0.95);

  o.batch_size = 65;  // above the model's max_batch
  CHECK(Train(*m->mlp, *store, train, test, o).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("300 local steps on Fashion-MNIST lower the loss", "[worker][local][slow]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(std::filesystem::path(dir) / kFashionMnistTrainImages)) {
    FAIL(dir << " is not installed: tools/setup installs it (Debian package "
                "dataset-fashion-mnist)");
  }
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir);
  REQUIRE(data.ok());
  TrainingConfig t;  // 784-256-128-10, SGD 0.1, seed 1
  std::unique_ptr<Model> m = MakeModel(t, 1000);
  auto store = *LocalParameterStore::Create(m->tables, m->mlp->num_params());
  TrainerOptions o;
  o.batch_size = 64;
  o.max_steps = 300;
  o.trace_loss_steps = 300;
  absl::StatusOr<TrainingSummary> s = Train(*m->mlp, *store, data->train, data->test, o);
  REQUIRE(s.ok());
  REQUIRE(s->loss_trace.size() == 300);
  const double first = std::accumulate(s->loss_trace.begin(), s->loss_trace.begin() + 20, 0.0) / 20;
  const double last = std::accumulate(s->loss_trace.end() - 20, s->loss_trace.end(), 0.0) / 20;
  // Untrained: about log(10) = 2.3; after 300 steps well under 1.
  CHECK(first > 1.5);
  CHECK(last < 0.5 * first);
  CHECK(s->test_accuracy > 0.6);  // about 0.72 after 300 steps
}

}  // namespace
}  // namespace cairn
