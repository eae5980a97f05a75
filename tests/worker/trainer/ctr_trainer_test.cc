// The ctr training loop's read ahead: the batch after the current one is
// gathered before the push (or, with a store on servers, on a thread of its
// own during the push before) and its rows read with it, and the loop
// trains on exactly what an ordinary pull would have given it.
#include "worker/trainer/ctr_trainer.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "common/config/job_config.h"
#include "kernels/cpu_backend.h"
#include "tests/worker/trainer/synthetic_criteo.h"
#include "worker/trainer/ctr_batch_ahead.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/ctr_store.h"
#include "worker/trainer/model_tables_binding.h"

namespace cairn {
namespace {

// A LocalCtrStore that reads ahead as a store on servers does (the push,
// then the next step's pull, in one call) and records what it was asked.
// `fail_ahead`: the calls (0-based) whose read ahead fails.
class ReadAheadStore final : public CtrParameterStore {
 public:
  ReadAheadStore(std::unique_ptr<LocalCtrStore> store, std::set<int> fail_ahead)
      : store_(std::move(store)), fail_ahead_(std::move(fail_ahead)) {}

  absl::StatusOr<absl::Span<const float>> Pull(const std::vector<std::vector<Key>>& keys,
                                               FieldRows* rows) override {
    ++pulls;
    return store_->Pull(keys, rows);
  }
  absl::Status PushAndClock(absl::Span<const float> head_grads,
                            const std::vector<std::vector<Key>>& keys,
                            const FieldRows& row_grads) override {
    pushed.push_back(keys);
    read_ahead.push_back(std::nullopt);
    return store_->PushAndClock(head_grads, keys, row_grads);
  }
  absl::StatusOr<std::optional<absl::Span<const float>>> PushClockAndPull(
      absl::Span<const float> head_grads, const std::vector<std::vector<Key>>& keys,
      const FieldRows& row_grads, const std::vector<std::vector<Key>>& next_keys,
      FieldRows* next_rows) override {
    const int call = ahead_calls++;
    pushed.push_back(keys);
    absl::Status s = store_->PushAndClock(head_grads, keys, row_grads);
    if (!s.ok()) return s;
    if (fail_ahead_.count(call) > 0) {
      read_ahead.push_back(std::nullopt);
      return std::nullopt;
    }
    read_ahead.push_back(next_keys);
    return store_->Pull(next_keys, next_rows);
  }

  bool WaitsOnServers() const override { return waits; }

  bool waits = false;  // as a store on servers: batches gathered ahead
  int pulls = 0;
  int ahead_calls = 0;
  // Per push, in order: its keys, and the keys read ahead with it (nullopt:
  // none).
  std::vector<std::vector<std::vector<Key>>> pushed;
  std::vector<std::optional<std::vector<std::vector<Key>>>> read_ahead;

 private:
  std::unique_ptr<LocalCtrStore> store_;
  std::set<int> fail_ahead_;
};

struct Rig {
  CpuBackend backend;
  std::unique_ptr<CtrModel> model;
  std::vector<BoundTable> head;
  std::vector<v1::TableSpec> fields;
  CriteoData train = SyntheticCriteo(96, 40, 1);
  CriteoData test = SyntheticCriteo(32, 40, 2);

  Rig() {
    TrainingConfig t;
    t.model = "ctr";
    t.embedding.width = 4;
    t.layers = {CtrHeadInputs(t.embedding.width), 8, 1};
    absl::StatusOr<std::unique_ptr<CtrModel>> m =
        CtrModel::Create(&backend, t.layers, t.embedding.width, 64);
    REQUIRE(m.ok());
    model = *std::move(m);
    std::vector<v1::TableSpec> dense;
    for (v1::TableSpec& table : ModelTables(t)) {
      (table.kind() == v1::TABLE_KIND_SPARSE ? fields : dense).push_back(std::move(table));
    }
    absl::StatusOr<std::vector<BoundTable>> bound = BindModelTables(model->head(), dense);
    REQUIRE(bound.ok());
    head = *std::move(bound);
  }
  std::unique_ptr<LocalCtrStore> Store() {
    absl::StatusOr<std::unique_ptr<LocalCtrStore>> s =
        LocalCtrStore::Create(head, model->head().num_params(), fields);
    REQUIRE(s.ok());
    return *std::move(s);
  }
};

TrainerOptions Options() {
  TrainerOptions o;
  o.batch_size = 16;  // 6 steps an epoch
  o.epochs = 2;
  o.seed = 3;
  o.trace_loss_steps = 100;
  return o;
}

TEST_CASE("ctr training reads each next batch ahead and trains on what a pull gives",
          "[worker][ctr]") {
  Rig plain_rig;
  std::unique_ptr<LocalCtrStore> plain = plain_rig.Store();
  absl::StatusOr<TrainingSummary> want =
      TrainCtr(*plain_rig.model, *plain, plain_rig.train, plain_rig.test, Options());
  REQUIRE(want.ok());
  REQUIRE(want->loss_trace.size() == 12);

  // The calls whose read ahead fails: the step after each pulls again.
  const std::set<int> fail = GENERATE(std::set<int>{}, std::set<int>{0, 3, 7});
  // With a store on servers the batch after next is gathered on a thread
  // of its own (CtrBatchAhead).
  const bool waits = GENERATE(false, true);
  Rig rig;
  ReadAheadStore store(rig.Store(), fail);
  store.waits = waits;
  absl::StatusOr<TrainingSummary> got =
      TrainCtr(*rig.model, store, rig.train, rig.test, Options());
  REQUIRE(got.ok());

  // Every step's loss and the test AUC are those of the loop that pulls.
  CHECK(got->loss_trace == want->loss_trace);
  CHECK(got->test_auc == want->test_auc);
  // Each epoch's last step reads nothing ahead (evaluation and a new
  // permutation follow); every other step does.
  REQUIRE(store.pushed.size() == 12);
  CHECK(store.ahead_calls == 10);
  for (size_t i = 0; i < store.pushed.size(); ++i) {
    const bool last_of_epoch = i % 6 == 5;
    if (last_of_epoch || store.read_ahead[i] == std::nullopt) continue;
    // What was read ahead is exactly the batch the next step trained on.
    CHECK(*store.read_ahead[i] == store.pushed[i + 1]);
  }
  // Pulls: each epoch's first step, each step after a failed read ahead,
  // and the evaluation (32 test examples: one chunk) after each epoch.
  CHECK(store.pulls == 2 + static_cast<int>(fail.size()) + 2);
}

TEST_CASE("a batch gathered ahead is the batch of its examples, taken once", "[worker][ctr]") {
  const CriteoData data = SyntheticCriteo(64, 40, 5);
  const std::vector<int32_t> first = {3, 9, 3, 40, 7, 12};
  const std::vector<int32_t> second = {1, 2, 63, 5};
  CtrBatch want;
  GatherCtrBatch(data, second, &want);

  CtrBatchAhead ahead(data);
  CtrBatch got;
  CHECK_FALSE(ahead.Take(second, &got));  // nothing started
  ahead.Start(first);
  ahead.Start(second);  // the first is dropped
  CHECK_FALSE(ahead.Take(first, &got));
  REQUIRE(ahead.Take(second, &got));
  CHECK(got.size == want.size);
  CHECK(got.keys == want.keys);
  CHECK(got.slot == want.slot);
  CHECK(got.integers == want.integers);
  CHECK(got.labels == want.labels);
  CHECK_FALSE(ahead.Take(second, &got));  // taken already
  ahead.Start(first);                      // left running: the destructor waits for it
}

}  // namespace
}  // namespace cairn
