// Tables, training and what the loader hands to the rest of the system:
// TableSpecs, the model's tables, JobSpec and the printed effective config.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "common/config/job_config.h"
#include "common/partitioning.h"
#include "tests/common/config_test_util.h"

namespace cairn {
namespace {

using Catch::Contains;
using Catch::Equals;
using Catch::StartsWith;
using testing::ParseError;
using testing::ParseOk;

constexpr char kTwoTables[] = R"(consistency: {mode: ssp, staleness: 3}
tables:
  - name: emb_user
    kind: sparse
    width: 16
    optimizer: {type: adagrad, learning_rate: 0.05}
    init: {type: normal, scale: 0.01, seed: 7}
    non_finite: allow
  - name: head.w
    kind: dense
    shape: [10, 16]
    chunk_size: 32
    optimizer: {type: adam, learning_rate: 0.001, beta2: 0.99, weight_decay: 0.0001}
    init: {type: he_uniform}
    aggregation: sum
    consistency: bsp
)";

}  // namespace

TEST_CASE("explicit tables fill TableSpec with every default written out", "[config][tables]") {
  const JobConfig c = ParseOk(kTwoTables);
  REQUIRE(c.tables.size() == 2);
  const v1::TableSpec& emb = c.tables[0];
  CHECK(emb.id() == 0);
  CHECK(emb.name() == "emb_user");
  CHECK(emb.kind() == v1::TABLE_KIND_SPARSE);
  CHECK(emb.width() == 16);
  CHECK(emb.shape_size() == 0);
  CHECK(emb.optimizer().kind() == v1::OPTIMIZER_KIND_ADAGRAD);
  CHECK(emb.optimizer().learning_rate() == 0.05f);
  CHECK(emb.optimizer().initial_accumulator() == 0.1f);
  CHECK(emb.optimizer().epsilon() == 1e-10f);
  CHECK(emb.init().kind() == v1::INIT_KIND_NORMAL);
  CHECK(emb.init().scale() == 0.01f);
  CHECK(emb.init().seed() == 7);
  CHECK(emb.non_finite() == v1::NON_FINITE_POLICY_ALLOW);
  CHECK(emb.aggregation() == v1::AGGREGATION_MEAN);
  CHECK(emb.consistency() == v1::CONSISTENCY_SSP);  // the job default
  CHECK(emb.staleness() == 3);

  const v1::TableSpec& head = c.tables[1];
  CHECK(head.id() == 1);
  CHECK(head.kind() == v1::TABLE_KIND_DENSE);
  REQUIRE(head.shape_size() == 2);
  CHECK(head.shape(0) == 10);
  CHECK(head.shape(1) == 16);
  CHECK(head.chunk_size() == 32);
  CHECK(head.optimizer().kind() == v1::OPTIMIZER_KIND_ADAM);
  CHECK(head.optimizer().beta1() == 0.9f);
  CHECK(head.optimizer().beta2() == 0.99f);
  CHECK(head.optimizer().epsilon() == 1e-8f);
  CHECK(head.optimizer().weight_decay() == 0.0001f);
  CHECK(head.init().kind() == v1::INIT_KIND_HE_UNIFORM);
  CHECK(head.non_finite() == v1::NON_FINITE_POLICY_REJECT);
  CHECK(head.aggregation() == v1::AGGREGATION_SUM);
  CHECK(head.consistency() == v1::CONSISTENCY_BSP);  // overridden per table
  CHECK(head.staleness() == 0);
}

TEST_CASE("a dense table's default chunk is 16384 floats, or the whole small table",
          "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n"
      "  - {name: big, kind: dense, shape: [1000, 100]}\n"
      "  - {name: small, kind: dense, shape: [10]}\n"
      "  - {name: exact, kind: dense, shape: [128, 128]}\n");
  CHECK(c.tables[0].chunk_size() == 16384);
  CHECK(c.tables[1].chunk_size() == 10);
  CHECK(c.tables[2].chunk_size() == 16384);
  CHECK(c.tables[0].optimizer().kind() == v1::OPTIMIZER_KIND_SGD);  // default optimizer
  CHECK(c.tables[0].optimizer().learning_rate() == 0.1f);
  CHECK(c.tables[0].init().kind() == v1::INIT_KIND_ZEROS);
  CHECK(DefaultChunkSize(1) == 1);
  CHECK(DefaultChunkSize(16383) == 16383);
  CHECK(DefaultChunkSize(16385) == 16384);
}

TEST_CASE("bad tables are rejected naming the table's key", "[config][tables]") {
  const std::string head = "tables:\n  - name: t\n";
  CHECK_THAT(ParseError(head + "    kind: dense\n    width: 4\n    shape: [2]\n"),
             Equals("job.yaml:4:12: `tables[0].width` applies to sparse tables only; use shape"));
  CHECK_THAT(ParseError(head + "    kind: dense\n"),
             Contains("`tables[0].shape` is required for a dense table"));
  CHECK_THAT(ParseError(head + "    kind: dense\n    shape: [4, 0]\n"),
             Equals("job.yaml:4:16: `tables[0].shape[1]` must be an integer >= 1; got `0`"));
  CHECK_THAT(ParseError(head + "    kind: dense\n    shape: []\n"),
             Contains("`tables[0].shape` needs at least 1 entry; got 0"));
  CHECK_THAT(ParseError(head + "    kind: sparse\n    width: 0\n"),
             Contains("`tables[0].width` must be an integer in [1, 262144]; got 0"));
  CHECK_THAT(ParseError(head + "    kind: sparse\n    width: 4\n    chunk_size: 8\n"),
             Contains("`tables[0].chunk_size` applies to dense tables only"));
  CHECK_THAT(ParseError(head + "    kind: sprase\n    width: 4\n"),
             Contains("got `sprase` (did you mean `sparse`?)"));
  CHECK_THAT(ParseError("tables:\n  - {name: \"a b\", kind: sparse, width: 4}\n"),
             Contains("`tables[0].name` must use only letters, digits"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 4}\n"
                        "  - {name: a, kind: sparse, width: 8}\n"),
             Equals("job.yaml:3:12: table name \"a\" is used twice; first at job.yaml:2:12"));
  CHECK_THAT(ParseError("tables:\n  - {kind: sparse, width: 4}\n"),
             Contains("`tables[0].name` is required"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 4, non_finite: skip}\n"),
             Contains("`tables[0].non_finite` must be one of reject, allow"));
  CHECK_THAT(ParseError("tables: {name: a}\n"), Contains("`tables` must be a list; got a map"));
}

TEST_CASE("optimizer and init keys are checked against their type", "[config][tables]") {
  const std::string t = "tables:\n  - name: e\n    kind: sparse\n    width: 4\n";
  CHECK_THAT(ParseError(t + "    optimizer: {type: adam, learning_rate: 0.1, momentum: 0.9}\n"),
             Contains("`tables[0].optimizer.momentum` does not apply to optimizer type adam "
                      "(only to sgd)"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd}\n"),
             Contains("`tables[0].optimizer.learning_rate` is required"));
  CHECK_THAT(ParseError(t + "    optimizer: {learning_rate: 0.1}\n"),
             Contains("`tables[0].optimizer.type` is required"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd, learning_rate: 0}\n"),
             Contains("`tables[0].optimizer.learning_rate` must be a number > 0; got `0`"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd, learning_rate: 0.1, momentum: 1}\n"),
             Contains("`tables[0].optimizer.momentum` must be a number in [0, 1); got `1`"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd, learning_rate: .inf}\n"),
             Contains("must be a number > 0; got `.inf`"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd, learning_rate: 0.1, nesterov: true}\n"),
             Contains("`tables[0].optimizer.nesterov` needs a momentum > 0"));
  CHECK_THAT(ParseError(t + "    optimizer: {type: sgd, learning_rate: 0.1, epsilon: 1e-8}\n"),
             Contains("does not apply to optimizer type sgd"));
  CHECK_THAT(ParseError(t + "    init: {type: uniform}\n"),
             Contains("`tables[0].init.scale` is required with init type uniform"));
  CHECK_THAT(ParseError(t + "    init: {type: zeros, seed: 3}\n"),
             Contains("`tables[0].init.seed` does not apply to init type zeros"));
  CHECK_THAT(ParseError(t + "    init: {type: constant}\n"),
             Contains("`tables[0].init.value` is required with init type constant"));
  CHECK_THAT(ParseError(t + "    init: {type: he_uniform, scale: 2}\n"),
             Contains("`tables[0].init.scale` does not apply to init type he_uniform"));
  const JobConfig c = ParseOk(t + "    init: {type: constant, value: -0.5}\n"
                                  "    optimizer: {type: sgd, learning_rate: 1e-2, "
                                  "momentum: 0.5, nesterov: true}\n");
  CHECK(c.tables[0].init().value() == -0.5f);
  CHECK(c.tables[0].optimizer().learning_rate() == 0.01f);
  CHECK(c.tables[0].optimizer().nesterov());
}

TEST_CASE("per-table consistency follows the job's rules", "[config][tables]") {
  const std::string t = "tables:\n  - name: e\n    kind: sparse\n    width: 4\n";
  CHECK_THAT(ParseError(t + "    staleness: 2\n"),
             Contains("`tables[0].staleness` only applies to ssp; the consistency here is bsp "
                      "(inherited)"));
  CHECK_THAT(ParseError(t + "    consistency: ssp\n"),
             Contains("`tables[0].staleness` is required when `tables[0].consistency` is ssp"));
  const JobConfig c = ParseOk(t + "    consistency: ssp\n    staleness: 4\n");
  CHECK(c.tables[0].consistency() == v1::CONSISTENCY_SSP);
  CHECK(c.tables[0].staleness() == 4);
  const JobConfig inherit =
      ParseOk("consistency: {mode: ssp, staleness: 1}\n" + t + "    staleness: 5\n");
  CHECK(inherit.tables[0].consistency() == v1::CONSISTENCY_SSP);
  CHECK(inherit.tables[0].staleness() == 5);
}

TEST_CASE("training adds the MLP's tables after the explicit ones", "[config][training]") {
  const JobConfig c = ParseOk(
      "consistency: {mode: ssp, staleness: 2}\n"
      "tables:\n  - {name: extra, kind: sparse, width: 8}\n"
      "training:\n  layers: [4, 3, 2]\n  seed: 9\n"
      "  optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}\n");
  REQUIRE(c.tables.size() == 5);
  CHECK(c.tables[0].name() == "extra");
  const v1::TableSpec& w0 = c.tables[1];
  CHECK(w0.name() == "mlp.fc0.weight");
  CHECK(w0.id() == 1);
  CHECK(std::vector<int64_t>(w0.shape().begin(), w0.shape().end()) ==
        std::vector<int64_t>{3, 4});  // [out, in]
  CHECK(w0.chunk_size() == 12);
  CHECK(w0.init().kind() == v1::INIT_KIND_HE_UNIFORM);
  CHECK(w0.init().seed() == 9);
  CHECK(w0.optimizer().learning_rate() == 0.5f);
  CHECK(w0.optimizer().momentum() == 0.9f);
  CHECK(w0.consistency() == v1::CONSISTENCY_SSP);
  CHECK(w0.staleness() == 2);
  const v1::TableSpec& b0 = c.tables[2];
  CHECK(b0.name() == "mlp.fc0.bias");
  CHECK(std::vector<int64_t>(b0.shape().begin(), b0.shape().end()) == std::vector<int64_t>{3});
  CHECK(b0.init().kind() == v1::INIT_KIND_ZEROS);
  CHECK(c.tables[3].name() == "mlp.fc1.weight");
  CHECK(std::vector<int64_t>(c.tables[3].shape().begin(), c.tables[3].shape().end()) ==
        std::vector<int64_t>{2, 3});
  CHECK(c.tables[4].name() == "mlp.fc1.bias");
  CHECK(c.tables[4].id() == 4);
}

TEST_CASE("training defaults and checks", "[config][training]") {
  const JobConfig c = ParseOk("training: {}\n");
  CHECK(c.has_training);
  CHECK(c.training.layers == std::vector<int>{784, 256, 128, 10});
  CHECK(c.training.optimizer.kind() == v1::OPTIMIZER_KIND_SGD);
  CHECK(c.training.optimizer.learning_rate() == 0.1f);
  CHECK(c.tables.size() == 6);
  CHECK_FALSE(ParseOk("metrics: {}\n").has_training);
  CHECK(ParseOk("metrics: {}\n").tables.empty());
  CHECK_THAT(ParseError("training: {layers: [784]}\n"),
             Contains("`training.layers` needs at least 2 entries; got 1"));
  CHECK_THAT(ParseError("training: {layers: [784, 0, 10]}\n"),
             Contains("`training.layers[1]` must be an integer >= 1; got `0`"));
  CHECK_THAT(ParseError("training: {model: cnn}\n"), Contains("must be one of mlp, ctr"));
  CHECK_THAT(ParseError("training: {slowdown: 0.5}\n"),
             Contains("`training.slowdown` must be a number >= 1; got `0.5`"));
  CHECK_THAT(ParseError("training: {device: gpu}\n"),
             Contains("`training.device` must be one of auto, cpu, cuda"));
  CHECK_THAT(ParseError("training: {seed: -1}\n"), Contains("`training.seed` must be"));
  CHECK_THAT(ParseError("training: {batch_size: 0}\n"), Contains("`training.batch_size`"));
  CHECK_THAT(ParseError("tables:\n  - {name: mlp.fc0.bias, kind: sparse, width: 4}\n"
                        "training: {layers: [2, 2]}\n"),
             StartsWith("job.yaml:3:11: table name \"mlp.fc0.bias\" is used twice (the "
                        "training model adds"));
  const JobConfig big = ParseOk("training: {seed: 18446744073709551615, max_steps: 100, "
                                "slowdown: 2.5, device: cpu}\n");
  CHECK(big.training.seed == 18446744073709551615ull);
  CHECK(big.training.max_steps == 100);
  CHECK(big.training.slowdown == 2.5);
  CHECK(big.training.device == "cpu");
}

TEST_CASE("ModelTables builds weight and bias per layer", "[config][training]") {
  TrainingConfig t;
  t.layers = {784, 256, 10};
  t.seed = 5;
  const std::vector<v1::TableSpec> tables = ModelTables(t);
  REQUIRE(tables.size() == 4);
  CHECK(tables[0].name() == "mlp.fc0.weight");
  CHECK(tables[0].shape(0) == 256);
  CHECK(tables[0].shape(1) == 784);
  CHECK(tables[0].chunk_size() == 16384);
  CHECK(tables[0].init().seed() == 5);
  CHECK(tables[1].chunk_size() == 256);
  CHECK(tables[3].name() == "mlp.fc1.bias");
  CHECK(tables[3].shape(0) == 10);
  CHECK(tables[3].id() == 3);
  CHECK(tables[3].consistency() == v1::CONSISTENCY_BSP);
  CHECK(tables[3].optimizer().kind() == v1::OPTIMIZER_KIND_SGD);  // DefaultOptimizerSpec
}

TEST_CASE("model ctr: 26 sparse embedding tables, then the head's dense ones",
          "[config][training][ctr]") {
  const JobConfig c = ParseOk(
      "training:\n  model: ctr\n  data_dir: /data/ctr\n"
      "  embedding: {width: 4, min_count: 2, capacity_rows: 1000, evict_to: 0.5}\n"
      "  layers: [117, 16, 1]\n  optimizer: {type: adagrad, learning_rate: 0.05}\n");
  REQUIRE(c.tables.size() == 26 + 4);
  const v1::TableSpec& c1 = c.tables[0];
  CHECK(c1.name() == "ctr.c1");
  CHECK(c1.kind() == v1::TABLE_KIND_SPARSE);
  CHECK(c1.width() == 4);
  CHECK(c1.min_count() == 2);
  CHECK(c1.capacity_rows() == 1000);
  CHECK(c1.evict_to() == 0.5);
  CHECK(c1.aggregation() == v1::AGGREGATION_SUM);  // the workers scale their rows
  CHECK(c1.optimizer().kind() == v1::OPTIMIZER_KIND_ADAGRAD);
  CHECK(c1.init().kind() == v1::INIT_KIND_NORMAL);
  CHECK(c.tables[25].name() == "ctr.c26");
  CHECK(c.tables[26].name() == "ctr.fc0.weight");
  CHECK(c.tables[26].shape(1) == 117);
  CHECK(c.tables[26].aggregation() == v1::AGGREGATION_MEAN);
  CHECK(c.tables[29].name() == "ctr.fc1.bias");
  // Without layers the head is [26 * width + 13, 64, 1].
  CHECK(ParseOk("training: {model: ctr, data_dir: /d, embedding: {width: 2}}\n").training.layers ==
        std::vector<int>{65, 64, 1});
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, layers: [100, 1]}\n"),
             Contains("the ctr model's head takes 221 inputs (26 fields x embedding.width 8 + 13 "
                      "integer features) and gives 1 output; got [100, 1]"));
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, layers: [221, 2]}\n"),
             Contains("gives 1 output"));
  CHECK_THAT(ParseError("training: {model: ctr}\n"),
             Contains("the ctr model needs training.data_dir"));
  CHECK_THAT(ParseError("training: {embedding: {width: 4}}\n"),
             Contains("applies to model: ctr only"));
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, embedding: {width: 0}}\n"),
             Contains("`training.embedding.width`"));
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, embedding: {evict_to: 0.5}}\n"),
             Contains("needs capacity_rows"));
}

TEST_CASE("ToJobSpec carries what every process must agree on", "[config]") {
  const std::string yaml =
      "cluster: {servers: 3, workers: 4, partitions: 16, lease_timeout: 3s, "
      "heartbeat_interval: 250ms, rereplication_delay: 1m}\n"
      "rpc: {max_message_size: 64MiB, request_split_size: 512KiB, deadline: 5s}\n" +
      std::string(kTwoTables).substr(std::string(kTwoTables).find("tables:"));
  const JobConfig c = ParseOk(yaml);
  const v1::JobSpec spec = ToJobSpec(c);
  CHECK(spec.tables_size() == 2);
  CHECK(spec.tables(1).name() == "head.w");
  CHECK(spec.num_partitions() == 16);
  CHECK(spec.num_servers() == 3);
  CHECK(spec.num_workers() == 4);
  CHECK(spec.max_message_bytes() == 67108864);
  CHECK(spec.request_split_bytes() == 524288);
  CHECK(spec.pull_deadline_ms() == 5000);
  CHECK(spec.lease_timeout_ms() == 3000);
  CHECK(spec.heartbeat_interval_ms() == 250);
  CHECK(spec.rereplication_delay_ms() == 60000);
  CHECK(spec.config_hash() == ConfigHash(yaml, {}));
  CHECK(spec.config_hash().size() == 16);
  // A different file hashes differently; an override changes the hash too.
  CHECK(ConfigHash(yaml + "\n", {}) != spec.config_hash());
  CHECK(ParseOk(yaml, {"cluster.servers=3"}).config_hash != spec.config_hash());
}

TEST_CASE("the config hash is XXH64 of the file in hex", "[config]") {
  // XXH64("", seed 0) = 0xef46db3751d8e999 (the xxHash reference value).
  CHECK(ConfigHash("", {}) == "ef46db3751d8e999");
}

TEST_CASE("a process whose config hash differs from the coordinator's is told so", "[config]") {
  const std::string yaml = "cluster:\n  servers: 1\n";
  const std::vector<std::string> mine = {"training.epochs=3"};
  CHECK(ConfigHashMismatch("worker 1", yaml, mine, ConfigHash(yaml, mine)).empty());
  CHECK(ConfigHashMismatch("worker 1", yaml, mine, "").empty());  // unknown: nothing to compare
  // The coordinator's own --resume does not count.
  CHECK(ConfigHashMismatch("worker 1", yaml, mine,
                           ConfigHash(yaml, {"training.epochs=3", "checkpoint.resume=latest"}))
            .empty());
  const std::string m = ConfigHashMismatch("worker 1", yaml, mine, ConfigHash(yaml, {}));
  CHECK_THAT(m, Catch::StartsWith(absl::StrCat("worker 1 runs config hash ", ConfigHash(yaml, mine),
                                               " and the coordinator ", ConfigHash(yaml, {}),
                                               ": they were started with different job files "
                                               "or --set overrides")));
}

TEST_CASE("DescribeConfig prints every effective value, one per line", "[config]") {
  const JobConfig c = ParseOk(kTwoTables);
  const std::string text = DescribeConfig(c);
  for (const char* line :
       {"config.path: job.yaml", "cluster.coordinator: 127.0.0.1:7070", "cluster.servers: 1",
        "cluster.partitions: 64", "cluster.lease_timeout: 5s",
        "cluster.heartbeat_interval: 500ms", "cluster.startup_timeout: 1m",
        "cluster.replication: 1", "cluster.rereplication_delay: 30s",
        "rpc.max_message_size: 256MiB",
        "rpc.request_split_size: 1MiB", "rpc.deadline: 1m", "rpc.requests_in_flight: 4",
        "rpc.server_threads: 1", "rpc.busy_poll: auto", "rpc.call_slots: true",
        "consistency.mode: ssp",
        "consistency.staleness: 3", "tables[0].name: emb_user", "tables[0].width: 16",
        "tables[0].optimizer.type: adagrad", "tables[0].optimizer.learning_rate: 0.05",
        "tables[0].init.seed: 7", "tables[0].non_finite: allow", "tables[0].staleness: 3",
        "tables[1].shape: [10, 16]", "tables[1].chunk_size: 32",
        "tables[1].optimizer.beta2: 0.99", "tables[1].consistency: bsp",
        "tables[1].aggregation: sum", "metrics.host: 127.0.0.1", "metrics.port: 0",
        "metrics.tls: false"}) {
    INFO(line);
    CHECK_THAT(text, Contains(std::string("\n") + line + "\n") ||
                         StartsWith(std::string(line) + "\n"));
  }
  CHECK_THAT(text, Contains("config.hash: " + c.config_hash + "\n"));
  CHECK_THAT(text, !Contains("training."));
}

}  // namespace cairn

namespace cairn {

TEST_CASE("wire_dtype: per table and for the model's tables, fp32 by default", "[config][tables]") {
  const JobConfig plain = ParseOk(kTwoTables);
  CHECK(plain.tables[0].wire_dtype() == v1::DTYPE_FLOAT32);
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: dense, shape: [4], wire_dtype: bf16}\n"
      "  - {name: b, kind: sparse, width: 2, wire_dtype: fp16}\n"
      "  - {name: c, kind: dense, shape: [4], wire_dtype: fp32}\n"
      "training: {layers: [4, 2], wire_dtype: bf16}\n");
  REQUIRE(c.tables.size() == 5);
  CHECK(c.tables[0].wire_dtype() == v1::DTYPE_BFLOAT16);
  CHECK(c.tables[1].wire_dtype() == v1::DTYPE_FLOAT16);
  CHECK(c.tables[2].wire_dtype() == v1::DTYPE_FLOAT32);
  CHECK(c.tables[3].name() == "mlp.fc0.weight");
  CHECK(c.tables[3].wire_dtype() == v1::DTYPE_BFLOAT16);
  CHECK(c.tables[4].wire_dtype() == v1::DTYPE_BFLOAT16);
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], wire_dtype: half}\n"),
             Contains("job.yaml:2:"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], wire_dtype: half}\n"),
             Contains("`tables[0].wire_dtype`"));
  CHECK_THAT(ParseError("training: {wire_dtype: fp8}\n"), Contains("`training.wire_dtype`"));
}

}  // namespace cairn

namespace cairn {

TEST_CASE("ToJobSpec rotates each dense table's partitions by its name's hash", "[config]") {
  const JobConfig c = ParseOk(
      "cluster: {partitions: 16}\n"
      "tables:\n  - {name: a.bias, kind: dense, shape: [4]}\n"
      "  - {name: e, kind: sparse, width: 2}\n");
  const v1::JobSpec spec = ToJobSpec(c);
  CHECK(spec.tables(0).partition_offset() == DensePartitionOffset("a.bias", 16));
  CHECK(spec.tables(1).partition_offset() == 0);  // sparse keys are hashed already
}

}  // namespace cairn

namespace cairn {

TEST_CASE("min_count: admission of new ids, on sparse tables only, at least 1",
          "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: sparse, width: 2, min_count: 5}\n"
      "  - {name: b, kind: sparse, width: 2}\n");
  CHECK(c.tables[0].min_count() == 5);
  CHECK(c.tables[1].min_count() == 1);
  const std::string dense =
      ParseError("tables:\n  - {name: a, kind: dense, shape: [4], min_count: 2}\n");
  CHECK_THAT(dense, Contains("job.yaml:2:"));
  CHECK_THAT(dense, Contains("`tables[0].min_count`"));
  CHECK_THAT(dense, Contains("sparse tables only"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, min_count: 0}\n"),
             Contains("`tables[0].min_count`"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, min_count: two}\n"),
             Contains("`tables[0].min_count`"));
}

}  // namespace cairn

namespace cairn {

TEST_CASE("capacity_rows and evict_to: eviction, on sparse tables only", "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 1000}\n"
      "  - {name: b, kind: sparse, width: 2, capacity_rows: 10, evict_to: 0.5}\n"
      "  - {name: c, kind: sparse, width: 2}\n");
  CHECK(c.tables[0].capacity_rows() == 1000);
  CHECK(c.tables[0].evict_to() == 0.9);
  CHECK(c.tables[1].evict_to() == 0.5);
  CHECK(c.tables[2].capacity_rows() == 0);
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], capacity_rows: 2}\n"),
             Contains("sparse tables only"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, evict_to: 0.5}\n"),
             Contains("needs capacity_rows"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 5, "
                        "evict_to: 0}\n"),
             Contains("`tables[0].evict_to`"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 5, "
                        "evict_to: 1.5}\n"),
             Contains("`tables[0].evict_to`"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 0}\n"),
             Contains("`tables[0].capacity_rows`"));
}

TEST_CASE("eviction: lru (the default) or lfu, for sparse tables with a capacity",
          "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 10, eviction: lfu}\n"
      "  - {name: b, kind: sparse, width: 2, capacity_rows: 10, eviction: lru}\n"
      "  - {name: c, kind: sparse, width: 2, capacity_rows: 10}\n");
  CHECK(c.tables[0].eviction() == v1::EVICTION_POLICY_LFU);
  CHECK(c.tables[1].eviction() == v1::EVICTION_POLICY_LRU);
  CHECK(c.tables[2].eviction() == v1::EVICTION_POLICY_LRU);
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, eviction: lfu}\n"),
             Contains("`tables[0].eviction` needs capacity_rows (rows are evicted only above "
                      "it)"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], eviction: lfu}\n"),
             Contains("sparse tables only"));
  const std::string bad =
      ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 10, "
                 "eviction: arc}\n");
  CHECK_THAT(bad, Contains("`tables[0].eviction`"));
  CHECK_THAT(bad, Contains("lfu"));
  CHECK_THAT(bad, Contains("arc"));
  CHECK_THAT(bad, Contains("job.yaml:2:"));  // file and line
  const JobConfig ctr = ParseOk(
      "training: {model: ctr, data_dir: /d, embedding: {capacity_rows: 50, eviction: lfu}}\n");
  CHECK(ctr.tables[0].eviction() == v1::EVICTION_POLICY_LFU);
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, embedding: {eviction: lfu}}\n"),
             Contains("needs capacity_rows"));
}

TEST_CASE("cold_tier: evicted rows kept on RocksDB, for sparse tables with a capacity",
          "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 10, cold_tier: true}\n"
      "  - {name: b, kind: sparse, width: 2, capacity_rows: 10}\n");
  CHECK(c.tables[0].cold_tier());
  CHECK_FALSE(c.tables[1].cold_tier());
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, cold_tier: true}\n"),
             Contains("`tables[0].cold_tier` needs capacity_rows (rows leave memory only by "
                      "eviction)"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], cold_tier: true}\n"),
             Contains("sparse tables only"));
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 10, "
                        "cold_tier: yes please}\n"),
             Contains("`tables[0].cold_tier` must be true or false"));
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, embedding: {cold_tier: true}}\n"),
             Contains("needs capacity_rows"));
}

TEST_CASE("ttl_clocks: rows idle that many clocks are deleted, for sparse tables without a "
          "cold tier",
          "[config][tables]") {
  const JobConfig c = ParseOk(
      "tables:\n  - {name: a, kind: sparse, width: 2, ttl_clocks: 100}\n"
      "  - {name: b, kind: sparse, width: 2, capacity_rows: 10, ttl_clocks: 3}\n"
      "  - {name: c, kind: sparse, width: 2}\n");
  CHECK(c.tables[0].ttl_clocks() == 100);
  CHECK(c.tables[1].ttl_clocks() == 3);
  CHECK(c.tables[2].ttl_clocks() == 0);
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: dense, shape: [4], ttl_clocks: 5}\n"),
             Contains("`tables[0].ttl_clocks` applies to sparse tables only"));
  const std::string zero =
      ParseError("tables:\n  - {name: a, kind: sparse, width: 2, ttl_clocks: 0}\n");
  CHECK_THAT(zero, Contains("`tables[0].ttl_clocks`"));
  CHECK_THAT(zero, Contains("job.yaml:2:"));  // file and line
  CHECK_THAT(ParseError("tables:\n  - {name: a, kind: sparse, width: 2, capacity_rows: 10, "
                        "cold_tier: true, ttl_clocks: 5}\n"),
             Contains("`tables[0].ttl_clocks` cannot be combined with cold_tier"));
  const JobConfig ctr =
      ParseOk("training: {model: ctr, data_dir: /d, embedding: {ttl_clocks: 40}}\n");
  CHECK(ctr.tables[0].ttl_clocks() == 40);
  CHECK_THAT(ParseError("training: {model: ctr, data_dir: /d, embedding: {capacity_rows: 9, "
                        "cold_tier: true, ttl_clocks: 4}}\n"),
             Contains("cannot be combined with cold_tier"));
}

}  // namespace cairn
