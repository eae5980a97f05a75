// The job config loader's strictness (common/config/job_config.h): field
// cases B25 (wrong-typed or misspelt values must not fall back to defaults),
// B20 (bad coordinator addresses) and B01 (replication asked for but absent).
#include "common/config/job_config.h"

#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/common/config_test_util.h"

namespace cairn {
namespace {

using Catch::Contains;
using Catch::Equals;
using Catch::EndsWith;
using Catch::StartsWith;
using testing::ParseError;
using testing::ParseOk;

}  // namespace

TEST_CASE("B25.1: a quoted or fractional staleness is rejected, not defaulted",
          "[config][B25]") {
  CHECK_THAT(ParseError("consistency: {mode: ssp, staleness: \"2.5\"}\n"),
             Equals("job.yaml:1:37: `consistency.staleness` must be a non-negative integer; "
                    "got the quoted string \"2.5\""));
  CHECK_THAT(ParseError("consistency: {mode: ssp, staleness: 2.5}\n"),
             Equals("job.yaml:1:37: `consistency.staleness` must be a non-negative integer; "
                    "got `2.5`"));
  CHECK_THAT(ParseError("consistency:\n  mode: ssp\n  staleness: -1\n"),
             StartsWith("job.yaml:3:14: `consistency.staleness` must be a non-negative integer"));
  CHECK_THAT(ParseError("consistency: {mode: ssp, staleness: \"2\"}\n"),
             Contains("got the quoted string \"2\""));
  const JobConfig c = ParseOk("consistency: {mode: ssp, staleness: 2}\n");
  CHECK(c.consistency == v1::CONSISTENCY_SSP);
  CHECK(c.staleness == 2);
}

TEST_CASE("B25.2: a misspelt key is rejected with a suggestion", "[config][B25]") {
  CHECK_THAT(ParseError("consistency: {mode: ssp, stalenes: 2}\n"),
             Equals("job.yaml:1:26: unknown key `consistency.stalenes` (did you mean "
                    "`staleness`?)"));
  CHECK_THAT(ParseError("cluster:\n  servers: 2\n  lease_timout: 3s\n"),
             Equals("job.yaml:3:3: unknown key `cluster.lease_timout` (did you mean "
                    "`lease_timeout`?)"));
  CHECK_THAT(ParseError("clustr:\n  servers: 2\n"),
             Equals("job.yaml:1:1: unknown key `clustr` (did you mean `cluster`?)"));
  // Nothing close: the known keys are listed instead.
  CHECK_THAT(ParseError("metrics: {bind: a}\n"),
             Equals("job.yaml:1:11: unknown key `metrics.bind` (known keys: host, port, tls)"));
}

TEST_CASE("B25.3: durations need their unit, the effective value is printed", "[config][B25]") {
  CHECK_THAT(ParseError("cluster:\n  lease_timeout: 3\n"),
             Equals("job.yaml:2:18: `cluster.lease_timeout` is not a valid duration: \"3\" has "
                    "no unit; durations need a unit: 500ms, 3s, 1.5s, 2m or 1h"));
  CHECK_THAT(ParseError("cluster: {lease_timeout: 3 s}\n"),
             StartsWith("job.yaml:1:26: `cluster.lease_timeout` is not a valid duration"));
  // rereplication_delay may be 0 (re-replicate at once), never without a unit.
  CHECK(ParseOk("cluster: {rereplication_delay: 0s}\n").cluster.rereplication_delay ==
        absl::ZeroDuration());
  CHECK_THAT(ParseError("cluster:\n  servers: 2\n  rereplication_delay: 10\n"),
             StartsWith("job.yaml:3:24: `cluster.rereplication_delay` is not a valid duration"));
  for (const char* text : {"cluster: {lease_timeout: \"3s\"}\n", "cluster: {lease_timeout: 3s}\n",
                           "cluster: {lease_timeout: 3000ms}\n"}) {
    INFO(text);
    const JobConfig c = ParseOk(text);
    CHECK(c.cluster.lease_timeout == absl::Seconds(3));
    CHECK_THAT(DescribeConfig(c), Contains("\ncluster.lease_timeout: 3s\n"));
  }
}

TEST_CASE("B25.4: a message size is a binary size or rejected, never a default",
          "[config][B25]") {
  // The field report's key name is not ours: it is an unknown key here.
  CHECK_THAT(ParseError("rpc: {max_message_bytes: 64MB}\n"),
             Equals("job.yaml:1:7: unknown key `rpc.max_message_bytes` (did you mean "
                    "`max_message_size`?)"));
  CHECK_THAT(ParseError("rpc: {max_message_size: 64MB}\n"),
             Equals("job.yaml:1:25: `rpc.max_message_size` is not a valid size: \"64MB\" is "
                    "ambiguous (MB means 10^6 to some tools and 2^20 to others): write 64MiB "
                    "(67108864 bytes) or 64000000 (bytes)"));
  CHECK(ParseOk("rpc: {max_message_size: 64MiB}\n").rpc.max_message_bytes == 67108864);
  CHECK(ParseOk("rpc: {max_message_size: 67108864}\n").rpc.max_message_bytes == 67108864);
  CHECK_THAT(ParseError("rpc: {max_message_size: 512KiB}\n"),
             StartsWith("job.yaml:1:25: `rpc.max_message_size` must be between 1048576 and "
                        "2147483647 bytes"));
}

TEST_CASE("B25.5: YAML 1.1 yes/no are not booleans", "[config][B25]") {
  // The field report's key does not exist here (checkpoints are on when
  // checkpoint.dir is set): rejected as unknown, not read as a boolean.
  CHECK_THAT(ParseError("checkpoint: {enabled: no}\n"),
             Equals("job.yaml:1:14: unknown key `checkpoint.enabled` (known keys: dir, "
                    "every_clocks, every, keep, resume, init_from)"));
  const std::string opt = "training: {optimizer: {type: sgd, learning_rate: 0.1, momentum: 0.9, ";
  for (const char* word : {"no", "yes", "on", "off", "True", "N"}) {
    INFO(word);
    const std::string message = ParseError(opt + "nesterov: " + word + "}}\n");
    CHECK_THAT(message, StartsWith("job.yaml:1:80: `training.optimizer.nesterov` must be true "
                                   "or false; got `"));
    CHECK_THAT(message, Contains("use true/false"));
  }
  CHECK_THAT(ParseError(opt + "nesterov: \"true\"}}\n"), Contains("without quotes"));
  CHECK(ParseOk(opt + "nesterov: true}}\n").training.optimizer.nesterov());
  CHECK_FALSE(ParseOk(opt + "nesterov: false}}\n").training.optimizer.nesterov());
}

TEST_CASE("B25.6: no servers is rejected", "[config][B25]") {
  CHECK_THAT(ParseError("cluster: {servers: []}\n"),
             Equals("job.yaml:1:20: `cluster.servers` must be an integer >= 1; got a list"));
  CHECK_THAT(ParseError("cluster: {servers: 0}\n"),
             Equals("job.yaml:1:20: `cluster.servers` must be an integer >= 1; got 0"));
  CHECK_THAT(ParseError("cluster: {num_servers: 0}\n"),
             Equals("job.yaml:1:11: unknown key `cluster.num_servers` (did you mean "
                    "`servers`?)"));
  CHECK_THAT(ParseError("cluster: {workers: 0}\n"), Contains("`cluster.workers` must be"));
  CHECK_THAT(ParseError("cluster: {partitions: 0}\n"),
             Contains("`cluster.partitions` must be an integer in [1, 65536]; got 0"));
  CHECK_THAT(ParseError("cluster: {servers: }\n"),
             Equals("job.yaml:1:11: `cluster.servers` has no value; expected an integer >= 1"));
}

TEST_CASE("B25.7: a key given twice in one map is rejected naming both lines",
          "[config][B25]") {
  CHECK_THAT(ParseError("metrics:\n  port: 7000\n  port: 7000\n"),
             Equals("job.yaml:3:3: duplicate key `metrics.port`: set at line 2:3 and again at "
                    "line 3:3"));
  CHECK_THAT(ParseError("cluster: {servers: 1}\nrpc: {}\ncluster: {servers: 2}\n"),
             Equals("job.yaml:3:1: duplicate key `cluster`: set at line 1:1 and again at line "
                    "3:1"));
}

TEST_CASE("B20: bad coordinator addresses fail at validation naming the key",
          "[config][B20]") {
  CHECK_THAT(ParseError("cluster:\n  coordinator: \"10.0.0.300:5000\"\n"),
             StartsWith("job.yaml:2:16: cluster.coordinator: \"10.0.0.300\" is not a valid "
                        "IPv4 address"));
  CHECK_THAT(ParseError("cluster: {coordinator: host:99999}\n"),
             StartsWith("job.yaml:1:24: cluster.coordinator: port \"99999\""));
  CHECK_THAT(ParseError("cluster: {coordinator: \"::1:5000\"}\n"),
             Contains("cluster.coordinator"));
  const JobConfig c = ParseOk("cluster: {coordinator: \"[::1]:5000\"}\n");
  CHECK(c.cluster.coordinator == "[::1]:5000");
  CHECK_THAT(ParseError("metrics: {host: 10.1.2.256}\n"),
             StartsWith("job.yaml:1:17: metrics.host: \"10.1.2.256\" is not a valid IPv4"));
  CHECK_THAT(ParseError("metrics: {port: 65536}\n"),
             Contains("`metrics.port` must be an integer in [0, 65535]; got 65536"));
  CHECK_FALSE(ParseOk("metrics: {port: 1}\n").metrics.tls);
  CHECK(ParseOk("metrics: {tls: true}\n").metrics.tls);
  CHECK_THAT(ParseError("metrics: {tls: maybe}\n"),
             StartsWith("job.yaml:1:16: `metrics.tls` must be true or false"));
}

TEST_CASE("B01: replication is 2 by default (1 with one server), accepted up to the number of "
          "servers, and more is refused naming both numbers",
          "[config][B01]") {
  CHECK(ParseOk("cluster: {servers: 3}\n").cluster.replication == 2);
  CHECK(ToJobSpec(ParseOk("cluster: {servers: 3}\n")).replication() == 2);
  CHECK(ParseOk("cluster: {servers: 1}\n").cluster.replication == 1);
  CHECK(ParseOk("cluster: {servers: 3, replication: 1}\n").cluster.replication == 1);
  const JobConfig three = ParseOk("cluster: {servers: 3, replication: 3}\n");
  CHECK(three.cluster.replication == 3);
  CHECK(ToJobSpec(three).replication() == 3);
  CHECK_THAT(DescribeConfig(three), Contains("\ncluster.replication: 3\n"));
  CHECK(ParseOk("cluster: {servers: 2, replication: 2}\n").cluster.replication == 2);
  CHECK_THAT(ParseError("cluster: {replication: 2}\n"),
             Equals("job.yaml:1:24: `cluster.replication` (2) is more than `cluster.servers` (1): "
                    "each copy of a partition needs a server of its own"));
  CHECK_THAT(ParseError("cluster: {servers: 2, replication: 3}\n"),
             Contains("`cluster.replication` (3) is more than `cluster.servers` (2)"));
  CHECK_THAT(ParseError("cluster: {servers: 2, replication: 0}\n"),
             Contains("`cluster.replication` must be an integer"));
}

TEST_CASE("cluster.state_dir defaults to <checkpoint.dir>/coordinator, else none", "[config]") {
  const JobConfig plain = ParseOk("cluster: {servers: 1}\n");
  CHECK(plain.cluster.state_dir.empty());
  CHECK_THAT(DescribeConfig(plain), Contains("\ncluster.state_dir: none\n"));

  const JobConfig with_checkpoints = ParseOk("checkpoint: {dir: /data/ckpt}\n");
  CHECK(with_checkpoints.cluster.state_dir == "/data/ckpt/coordinator");
  CHECK_THAT(DescribeConfig(with_checkpoints),
             Contains("\ncluster.state_dir: /data/ckpt/coordinator\n"));

  const JobConfig own = ParseOk("cluster: {state_dir: /data/coord}\ncheckpoint: {dir: /data/ckpt}\n");
  CHECK(own.cluster.state_dir == "/data/coord");
  CHECK(ParseOk("cluster: {state_dir: /data/coord}\n").cluster.state_dir == "/data/coord");

  const JobConfig off = ParseOk("cluster: {state_dir: none}\ncheckpoint: {dir: /data/ckpt}\n");
  CHECK(off.cluster.state_dir.empty());
  CHECK_THAT(DescribeConfig(off), Contains("\ncluster.state_dir: none\n"));

  CHECK_THAT(ParseError("cluster: {state_dir: \"\"}\n"), Contains("cluster.state_dir"));
  CHECK(ParseOk("cluster: {servers: 1}\n", {"cluster.state_dir=/tmp/x"}).cluster.state_dir ==
        "/tmp/x");
}

TEST_CASE("empty, non-map and malformed files are rejected", "[config]") {
  CHECK_THAT(ParseError(""), StartsWith("job.yaml:1:1: the config is empty"));
  CHECK_THAT(ParseError("# only a comment\n\n"), StartsWith("job.yaml:1:1: the config is empty"));
  CHECK_THAT(ParseError("- cluster\n- rpc\n"),
             StartsWith("job.yaml:1:1: the top level must be a map"));
  CHECK_THAT(ParseError("just text\n"), StartsWith("job.yaml:1:1: the top level must be a map"));
  CHECK_THAT(ParseError("cluster: {servers: [1, 2}\n"), StartsWith("job.yaml:1:"));
  CHECK_THAT(ParseError("cluster: {servers: [1, 2}\n"), Contains("YAML syntax error"));
  CHECK_THAT(ParseError("cluster: {}\n---\nrpc: {}\n"), Contains("more than one YAML document"));
  // A tab in the indentation is named, whatever yaml-cpp calls the error.
  CHECK_THAT(ParseError("cluster:\n\tservers: 2\n"),
             StartsWith("job.yaml:2:") && Contains("YAML syntax error") &&
                 EndsWith(" (line 2 indents with a tab: YAML indents with spaces only)"));
  CHECK_THAT(ParseError("cluster: {servers: [1, 2}\n"), !Contains("tab"));
  CHECK_THAT(ParseError("cluster:\n"),
             Equals("job.yaml:1:1: `cluster` has no value; expected a map (write {} for "
                    "defaults)"));
  CHECK_THAT(ParseError("cluster: 3\n"), Contains("`cluster` must be a map; got `3`"));
}

TEST_CASE("cluster timing is checked against itself", "[config]") {
  CHECK_THAT(ParseError("cluster: {lease_timeout: 1s, heartbeat_interval: 1s}\n"),
             Equals("job.yaml:1:50: `cluster.heartbeat_interval` (1s) must be shorter than "
                    "lease_timeout (1s)"));
  CHECK_THAT(ParseError("cluster: {lease_timeout: 400ms}\n"),
             Contains("`cluster.lease_timeout` (400ms) must be longer than heartbeat_interval "
                      "(500ms, its default)"));
  CHECK_THAT(ParseError("cluster: {startup_timeout: 0s}\n"),
             Contains("`cluster.startup_timeout` must be greater than 0ms"));
  CHECK_THAT(ParseError("rpc: {deadline: 0.5ms}\n"), Contains("whole number of milliseconds"));
}

TEST_CASE("request split size must leave room under the message limit", "[config]") {
  CHECK_THAT(ParseError("rpc: {max_message_size: 4MiB, request_split_size: 3MiB}\n"),
             Equals("job.yaml:1:51: `rpc.request_split_size` request_split_size (3145728 "
                    "bytes) must be at most half of max_message_size (4194304 bytes)"));
  const JobConfig c = ParseOk("rpc: {max_message_size: 4MiB, request_split_size: 2MiB}\n");
  CHECK(c.rpc.max_message_bytes == 4 << 20);
  CHECK(c.rpc.request_split_bytes == 2 << 20);
}

TEST_CASE("requests through a shared region are cut at 2 MiB, or the gRPC split when larger",
          "[config]") {
  CHECK(ParseOk("rpc: {deadline: 5s}\n").rpc.shared_memory_split_bytes == 2 << 20);
  CHECK(ParseOk("rpc: {request_split_size: 8MiB}\n").rpc.shared_memory_split_bytes == 8 << 20);
  // The default stays within half of a small message limit ...
  CHECK(ParseOk("rpc: {max_message_size: 2MiB, request_split_size: 512KiB}\n")
            .rpc.shared_memory_split_bytes == 1 << 20);
  // ... and a quarter of the region.
  CHECK(ParseOk("rpc: {shared_memory_size: 4MiB, request_split_size: 256KiB}\n")
            .rpc.shared_memory_split_bytes == 1 << 20);
  CHECK(ParseOk("rpc: {shared_memory_size: 1MiB}\n").rpc.shared_memory_split_bytes == 1 << 20);
  CHECK(ParseOk("rpc: {shared_memory_split_size: 512KiB}\n").rpc.shared_memory_split_bytes ==
        512 << 10);
  CHECK_THAT(ParseError("rpc: {max_message_size: 4MiB, shared_memory_split_size: 3MiB}\n"),
             Equals("job.yaml:1:57: `rpc.shared_memory_split_size` shared_memory_split_size "
                    "(3145728 bytes) must be at most half of max_message_size (4194304 bytes): "
                    "a request the region has no room for goes through gRPC"));
  CHECK_THAT(ParseError("rpc: {shared_memory_split_size: 0}\n"),
             Contains("`rpc.shared_memory_split_size`"));
  const auto spec = ToJobSpec(ParseOk("rpc: {shared_memory_split_size: 3MiB}\n"));
  CHECK(spec.shared_memory_split_bytes() == 3 << 20);
}

TEST_CASE("requests in flight per server: 4 by default, 0 for all at once, never negative",
          "[config]") {
  CHECK(ParseOk("rpc: {deadline: 5s}\n").rpc.requests_in_flight == 4);
  CHECK(ParseOk("rpc: {requests_in_flight: 0}\n").rpc.requests_in_flight == 0);
  CHECK(ParseOk("rpc: {requests_in_flight: 16}\n").rpc.requests_in_flight == 16);
  CHECK_THAT(ParseError("rpc: {requests_in_flight: -1}\n"),
             Contains("job.yaml:1:27: `rpc.requests_in_flight`"));
  CHECK_THAT(ParseError("rpc: {requests_in_flight: four}\n"),
             Contains("`rpc.requests_in_flight`"));
}

TEST_CASE("server threads: 1 by default, at least 1 and at most 256", "[config]") {
  CHECK(ParseOk("rpc: {deadline: 5s}\n").rpc.server_threads == 1);
  CHECK(ParseOk("rpc: {server_threads: 8}\n").rpc.server_threads == 8);
  CHECK_THAT(ParseError("rpc: {server_threads: 0}\n"),
             Contains("job.yaml:1:23: `rpc.server_threads`"));
  CHECK_THAT(ParseError("rpc: {server_threads: 257}\n"), Contains("`rpc.server_threads`"));
}

TEST_CASE("busy polling: auto by default, off at 0s, a duration up to 100ms", "[config]") {
  CHECK_FALSE(ParseOk("rpc: {deadline: 5s}\n").rpc.busy_poll.has_value());
  CHECK_FALSE(ParseOk("rpc: {busy_poll: auto}\n").rpc.busy_poll.has_value());
  CHECK(ParseOk("rpc: {busy_poll: 0s}\n").rpc.busy_poll == absl::ZeroDuration());
  CHECK(ParseOk("rpc: {busy_poll: 1ms}\n").rpc.busy_poll == absl::Milliseconds(1));
  CHECK(ParseOk("rpc: {busy_poll: 100ms}\n").rpc.busy_poll == absl::Milliseconds(100));
  CHECK(ParseOk("rpc: {busy_poll: auto}\n", {"rpc.busy_poll=2ms"}).rpc.busy_poll ==
        absl::Milliseconds(2));
  CHECK_THAT(ParseError("rpc: {busy_poll: 101ms}\n"),
             Contains("job.yaml:1:18: `rpc.busy_poll` must be `auto` or a duration from 0s "
                      "(off) to 100ms; got 101ms"));
  CHECK_THAT(ParseError("rpc: {busy_poll: fast}\n"),
             Contains("job.yaml:1:18: `rpc.busy_poll` must be `auto` or a duration"));
  CHECK_THAT(ParseError("rpc: {busy_poll: 5}\n"), Contains("has no unit"));
  CHECK_THAT(ParseError("rpc: {busy_poll: \"\"}\n"), Contains("`rpc.busy_poll`"));
}

TEST_CASE("call slots: on by default, off with false, nothing else", "[config]") {
  CHECK(ParseOk("rpc: {deadline: 5s}\n").rpc.call_slots);
  CHECK_FALSE(ParseOk("rpc: {call_slots: false}\n").rpc.call_slots);
  CHECK_FALSE(ParseOk("rpc: {call_slots: true}\n", {"rpc.call_slots=false"}).rpc.call_slots);
  CHECK_THAT(ParseError("rpc: {call_slots: sometimes}\n"),
             Contains("job.yaml:1:19: `rpc.call_slots`"));
}

TEST_CASE("push acknowledgements: when accepted by default, when applied if asked, nothing else",
          "[config]") {
  CHECK(ParseOk("rpc: {deadline: 5s}\n").rpc.push_ack == "accepted");
  CHECK(ParseOk("rpc: {push_ack: applied}\n").rpc.push_ack == "applied");
  CHECK(ParseOk("rpc: {push_ack: applied}\n", {"rpc.push_ack=accepted"}).rpc.push_ack ==
        "accepted");
  CHECK_THAT(ParseError("rpc: {push_ack: received}\n"),
             Contains("job.yaml:1:17: `rpc.push_ack` must be one of accepted, applied"));
}

TEST_CASE("consistency staleness only goes with ssp", "[config]") {
  CHECK_THAT(ParseError("consistency: {mode: bsp, staleness: 2}\n"),
             Contains("`consistency.staleness` only applies to ssp; the consistency here is bsp"));
  CHECK_THAT(ParseError("consistency: {mode: asp, staleness: 0}\n"),
             Contains("the consistency here is asp"));
  CHECK_THAT(ParseError("consistency: {staleness: 2}\n"), Contains("bsp (inherited)"));
  CHECK_THAT(ParseError("consistency: {mode: ssp}\n"),
             Equals("job.yaml:1:14: `consistency.staleness` is required when "
                    "`consistency.mode` is ssp (a non-negative integer)"));
  CHECK_THAT(ParseError("consistency: {mode: sps, staleness: 1}\n"),
             Equals("job.yaml:1:21: `consistency.mode` must be one of bsp, ssp, asp; got "
                    "`sps` (did you mean `ssp`?)"));
  const JobConfig asp = ParseOk("consistency: {mode: asp}\n");
  CHECK(asp.consistency == v1::CONSISTENCY_ASP);
  CHECK(asp.staleness == 0);
  const JobConfig none = ParseOk("metrics: {}\n");
  CHECK(none.consistency == v1::CONSISTENCY_BSP);
  CHECK(none.staleness == 0);
}

TEST_CASE("the Fashion-MNIST example parses to the documented values", "[config]") {
  const absl::StatusOr<JobConfig> r =
      LoadJobConfig(std::string(CAIRN_SOURCE_DIR) + "/examples/fashion-mnist.yaml");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  const JobConfig& c = *r;
  CHECK(c.cluster.coordinator == "127.0.0.1:7070");
  CHECK(c.cluster.servers == 2);
  CHECK(c.cluster.workers == 2);
  CHECK(c.cluster.partitions == 64);
  CHECK(c.cluster.lease_timeout == absl::Seconds(5));
  CHECK(c.cluster.heartbeat_interval == absl::Milliseconds(500));
  CHECK(c.rpc.max_message_bytes == 256 << 20);
  CHECK(c.rpc.request_split_bytes == 1 << 20);
  CHECK(c.rpc.deadline == absl::Seconds(60));
  CHECK(c.consistency == v1::CONSISTENCY_BSP);
  REQUIRE(c.has_training);
  CHECK(c.training.layers == std::vector<int>{784, 256, 128, 10});
  CHECK(c.training.batch_size == 64);
  CHECK(c.training.epochs == 15);
  CHECK(c.training.seed == 1);
  CHECK(c.training.data_dir == "/usr/share/datasets/fashion-mnist");
  CHECK(c.training.optimizer.kind() == v1::OPTIMIZER_KIND_SGD);
  CHECK(c.training.optimizer.learning_rate() == 0.1f);
  CHECK(c.training.optimizer.momentum() == 0.9f);
  REQUIRE(c.tables.size() == 6);  // weight and bias of 3 layers
  CHECK(c.tables[0].name() == "mlp.fc0.weight");
  CHECK(c.tables[5].name() == "mlp.fc2.bias");
  CHECK(c.config_hash.size() == 16);
}

TEST_CASE("every example config parses", "[config]") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(CAIRN_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    const absl::StatusOr<JobConfig> r = LoadJobConfig(entry.path().string());
    CHECK(r.ok());
    if (!r.ok()) WARN(r.status().ToString());
    ++count;
  }
  CHECK(count >= 2);
}

TEST_CASE("the SSP embeddings example keeps its per-table overrides", "[config]") {
  const absl::StatusOr<JobConfig> r =
      LoadJobConfig(std::string(CAIRN_SOURCE_DIR) + "/examples/ssp-embeddings.yaml");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->tables.size() == 3);
  CHECK(r->tables[0].consistency() == v1::CONSISTENCY_SSP);
  CHECK(r->tables[0].staleness() == 2);
  CHECK(r->tables[1].optimizer().initial_accumulator() == 0.01f);
  CHECK(r->tables[2].consistency() == v1::CONSISTENCY_BSP);
  CHECK(r->tables[2].staleness() == 0);
  CHECK(r->tables[2].chunk_size() == 64);
  CHECK(r->rpc.max_message_bytes == 64 << 20);
  CHECK(r->metrics.port == 9100);
}

TEST_CASE("a directory given as the job file is named as one", "[config]") {
  const absl::StatusOr<JobConfig> r = LoadJobConfig(CAIRN_SOURCE_DIR);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()),
             Equals(std::string(CAIRN_SOURCE_DIR) + ": a directory, not a YAML job file"));
}

TEST_CASE("a missing file is NotFound", "[config]") {
  const absl::StatusOr<JobConfig> r = LoadJobConfig("/nonexistent/cairn-job.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(r.status().message()), Contains("/nonexistent/cairn-job.yaml"));
}

}  // namespace cairn

namespace cairn {

TEST_CASE("the four consistency errors each name file:line:column", "[config][consistency]") {
  using testing::ParseError;
  // A negative bound.
  CHECK_THAT(ParseError("consistency:\n  mode: ssp\n  staleness: -1\n"),
             Equals("job.yaml:3:14: `consistency.staleness` must be a non-negative integer; "
                    "got -1"));
  // SSP without a bound.
  CHECK_THAT(ParseError("consistency:\n  mode: ssp\n"),
             Equals("job.yaml:2:3: `consistency.staleness` is required when `consistency.mode` "
                    "is ssp (a non-negative integer)"));
  // A bound given with BSP or ASP.
  CHECK_THAT(ParseError("consistency:\n  mode: bsp\n  staleness: 2\n"),
             Equals("job.yaml:3:14: `consistency.staleness` only applies to ssp; the consistency "
                    "here is bsp: remove it or set ssp"));
  CHECK_THAT(ParseError("consistency:\n  mode: asp\n  staleness: 0\n"),
             Equals("job.yaml:3:14: `consistency.staleness` only applies to ssp; the consistency "
                    "here is asp: remove it or set ssp"));
  // An unknown mode.
  CHECK_THAT(ParseError("consistency:\n  mode: eventual\n"),
             StartsWith("job.yaml:2:9: `consistency.mode` must be one of bsp, ssp, asp; got "
                        "`eventual`"));
  // The same four on a table.
  const std::string table = "tables:\n  - name: e\n    kind: sparse\n    width: 4\n";
  CHECK_THAT(ParseError(table + "    consistency: ssp\n    staleness: -3\n"),
             StartsWith("job.yaml:6:16: `tables[0].staleness` must be a non-negative integer"));
  CHECK_THAT(ParseError(table + "    consistency: ssp\n"),
             StartsWith("job.yaml:2:5: `tables[0].staleness` is required when "
                        "`tables[0].consistency` is ssp"));
  CHECK_THAT(ParseError(table + "    consistency: asp\n    staleness: 1\n"),
             StartsWith("job.yaml:6:16: `tables[0].staleness` only applies to ssp"));
  CHECK_THAT(ParseError(table + "    consistency: sync\n"),
             StartsWith("job.yaml:5:18: `tables[0].consistency` must be one of bsp, ssp, asp"));
}

TEST_CASE("cluster.on_worker_loss is continue or fail", "[config][B16]") {
  using testing::ParseError;
  using testing::ParseOk;
  CHECK(ParseOk("metrics: {}\n").cluster.on_worker_loss == WorkerLossPolicy::kContinue);
  const JobConfig fail = ParseOk("cluster:\n  on_worker_loss: fail\n");
  CHECK(fail.cluster.on_worker_loss == WorkerLossPolicy::kFail);
  CHECK_THAT(DescribeConfig(fail), Contains("\ncluster.on_worker_loss: fail\n"));
  CHECK(ParseOk("cluster: {on_worker_loss: continue}\n").cluster.on_worker_loss ==
        WorkerLossPolicy::kContinue);
  CHECK(ParseOk("metrics: {}\n", {"cluster.on_worker_loss=fail"}).cluster.on_worker_loss ==
        WorkerLossPolicy::kFail);
  CHECK_THAT(ParseError("cluster:\n  on_worker_loss: ignore\n"),
             StartsWith("job.yaml:2:19: `cluster.on_worker_loss` must be one of continue, fail; "
                        "got `ignore`"));
}

}  // namespace cairn

namespace cairn {
namespace {

// Found by the job_config fuzzer: an alias inside the node it names made
// the loader recurse until the stack overflowed.
TEST_CASE("an alias that refers to a node holding it, or aliases that multiply, are errors",
          "[config]") {
  CHECK_THAT(ParseError("training: &t\n  layers: *t\n"),
             Contains("nests more than 64 levels deep (an alias that refers to a node holding "
                      "it?)"));
  std::string laughs = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    laughs += absl::StrCat(std::string(1, c), ": &", std::string(1, c), " [");
    for (int i = 0; i < 10; ++i) laughs += absl::StrCat(i ? ", " : "", "*", std::string(1, c - 1));
    laughs += "]\n";
  }
  CHECK_THAT(ParseError(laughs), Contains("aliases of aliases?"));
}

}  // namespace
}  // namespace cairn
