// A real coordinator and real servers on loopback, driven through the client
// library and through raw gRPC stubs: round trips, optimizer arithmetic, and
// every kind of bad request (each must leave stored values unchanged).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/bytes.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "common/status_conversion.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

std::string JobYaml(int servers, const std::string& tables, const std::string& mode = "bsp") {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: )", servers, R"(
  workers: 1
  partitions: 16
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
rpc:
  max_message_size: 256MiB
  deadline: 20s
consistency:
  mode: )", mode, R"(
tables:
)", tables);
}

std::unique_ptr<Client> ConnectWorker(const TestCluster& cluster) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = 0;
  options.connect_timeout = absl::Seconds(30);
  options.rpc_deadline = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

TEST_CASE("a 64 MiB dense table round-trips exactly through two servers",
          "[integration][shard]") {
  const int64_t n = 16 << 20;  // 16 Mi floats = 64 MiB
  auto cluster = TestCluster::Start("roundtrip", JobYaml(2, absl::StrCat(R"(
  - name: big
    kind: dense
    shape: [)", n, R"(]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
)")), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> client = ConnectWorker(**cluster);
  std::vector<float> grad(n);
  for (int64_t i = 0; i < n; ++i) grad[i] = static_cast<float>(i % 4093) * 0.25f - 7.0f;
  REQUIRE(client->PushDense({{"big", grad}}).get().ok());
  REQUIRE(client->Clock().ok());
  std::vector<float> values(n, 123.0f);
  absl::Status pulled = client->PullDense({{"big", absl::MakeSpan(values)}}).get();
  INFO(pulled.message() << "\n" << (*cluster)->Logs());
  REQUIRE(pulled.ok());
  // SGD, lr 1, from zeros: value = -grad, exactly (one float negation).
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) mismatches += values[i] != -grad[i];
  CHECK(mismatches == 0);
  CHECK(client->Finish().ok());
}

TEST_CASE("server-side optimizers give the hand-computed values on dense and sparse tables",
          "[integration][shard][optimizer]") {
  auto cluster = TestCluster::Start("optimizers", JobYaml(2, R"(
  - name: d_momentum
    kind: dense
    shape: [3, 5]
    chunk_size: 4
    optimizer: {type: sgd, learning_rate: 0.1, momentum: 0.9}
    init: {type: zeros}
  - name: d_adagrad
    kind: dense
    shape: [7]
    chunk_size: 2
    optimizer: {type: adagrad, learning_rate: 0.1, epsilon: 0.0, initial_accumulator: 0.0}
    init: {type: zeros}
  - name: s_adam
    kind: sparse
    width: 4
    optimizer: {type: adam, learning_rate: 0.1, beta1: 0.9, beta2: 0.999, epsilon: 1.0e-8}
    init: {type: constant, value: 1.0}
  - name: s_sgd
    kind: sparse
    width: 2
    optimizer: {type: sgd, learning_rate: 0.5}
    init: {type: zeros}
)"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> client = ConnectWorker(**cluster);
  const std::vector<Key> keys = {0, 1, Key{1} << 63, std::numeric_limits<Key>::max()};
  // The same values whether each table moves in an operation of its own or
  // all four in one (Client::Push / Client::Pull, one request per server).
  const bool combined = GENERATE(false, true);
  INFO((combined ? "one operation for all tables" : "one operation per table"));

  for (int step = 0; step < 2; ++step) {
    std::vector<float> ones15(15, 1.0f), fours7(7, 4.0f);
    std::vector<float> g_adam(16, 2.0f), g_sgd(8);
    for (int i = 0; i < 8; ++i) g_sgd[i] = static_cast<float>(i);
    if (combined) {
      // A table that does not fit fails the whole operation before
      // anything is sent: nothing of it is applied.
      std::vector<float> short_sgd(7);
      absl::Status refused = client->Push({{"d_momentum", ones15}, {"d_adagrad", fours7}},
                                          {{"s_adam", keys, g_adam}, {"s_sgd", keys, short_sgd}})
                                 .get();
      CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(refused.message()), Catch::Contains("s_sgd"));
      REQUIRE(client->Push({{"d_momentum", ones15}, {"d_adagrad", fours7}},
                           {{"s_adam", keys, g_adam}, {"s_sgd", keys, g_sgd}})
                  .get()
                  .ok());
    } else {
      REQUIRE(client->PushDense({{"d_momentum", ones15}, {"d_adagrad", fours7}}).get().ok());
      REQUIRE(client->PushSparse("s_adam", keys, g_adam).get().ok());
      REQUIRE(client->PushSparse("s_sgd", keys, g_sgd).get().ok());
    }
    REQUIRE(client->Clock().ok());
  }
  std::vector<float> momentum(15), adagrad(7), adam(16), sgd(8);
  if (combined) {
    REQUIRE(client
                ->Pull({{"d_momentum", absl::MakeSpan(momentum)},
                        {"d_adagrad", absl::MakeSpan(adagrad)}},
                       {{"s_adam", keys, absl::MakeSpan(adam)}, {"s_sgd", keys, absl::MakeSpan(sgd)}})
                .get()
                .ok());
  } else {
    REQUIRE(client->PullDense({{"d_momentum", absl::MakeSpan(momentum)},
                               {"d_adagrad", absl::MakeSpan(adagrad)}})
                .get()
                .ok());
    REQUIRE(client->PullSparse("s_adam", keys, absl::MakeSpan(adam)).get().ok());
    REQUIRE(client->PullSparse("s_sgd", keys, absl::MakeSpan(sgd)).get().ok());
  }
  // Momentum (v = 0.9 v + g; w -= 0.1 v): v1 = 1, w1 = -0.1; v2 = 1.9, w2 = -0.29.
  for (float v : momentum) CHECK_THAT(v, Catch::Matchers::WithinAbs(-0.29, 1e-6));
  // Adagrad (acc += g^2; w -= 0.1 g / sqrt(acc)), g = 4: acc 16, w -0.1; acc 32,
  // w -0.1 - 0.4 / sqrt(32) = -0.170710678.
  for (float v : adagrad) CHECK_THAT(v, Catch::Matchers::WithinAbs(-0.170710678, 1e-6));
  // Adam with constant g: mhat = g, vhat = g^2 each step, so each
  // step moves w by lr * g / (|g| + 1e-8), i.e. -lr to 1e-8: 1 - 0.2 = 0.8.
  for (float v : adam) CHECK_THAT(v, Catch::Matchers::WithinAbs(0.8, 1e-6));
  // SGD lr 0.5, two steps of g: w = -g.
  for (int i = 0; i < 8; ++i) CHECK(sgd[i] == -static_cast<float>(i));
  CHECK(client->Finish().ok());
}

// Raw access to one server, for requests the client library would never send.
struct RawServer {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ParameterService::Stub> stub;
  uint64_t version = 0;
  uint32_t table_id = 0;
};

RawServer ConnectRaw(const TestCluster& cluster, uint32_t server_id) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  auto map = coordinator.GetPartitionMap(absl::Seconds(10));
  REQUIRE(map.ok());
  RawServer raw;
  raw.version = map->map().version();
  for (const auto& m : map->map().servers()) {
    if (m.id() == server_id) {
      raw.channel = MakeChannel(m.address(), 256 << 20);
      raw.stub = v1::ParameterService::NewStub(raw.channel);
    }
  }
  REQUIRE(raw.stub != nullptr);
  return raw;
}

// A push by worker 0's first incarnation. `shape` empty: what the table
// takes ([4] for dense4, [keys, 2] for emb).
grpc::Status RawPush(RawServer& raw, const std::string& table, uint32_t table_id,
                     std::vector<Key> keys, std::vector<float> values, uint64_t sequence,
                     uint64_t version, std::vector<int64_t> shape = {},
                     v1::DType dtype = v1::DTYPE_FLOAT32) {
  v1::PushRequest request;
  request.set_map_version(version);
  request.set_worker_id(0);
  request.set_incarnation(1);
  request.set_sequence(sequence);
  request.set_clock(0);
  v1::TableValues* tv = request.add_tables();
  tv->set_table(table);
  tv->set_table_id(table_id);
  tv->set_keys(KeysToBytes(keys));
  tv->set_values(FloatsToBytes(values));
  if (shape.empty()) {
    shape = table == "emb" ? std::vector<int64_t>{static_cast<int64_t>(keys.size()), 2}
                           : std::vector<int64_t>{4};
  }
  for (int64_t d : shape) tv->add_shape(d);
  tv->set_dtype(dtype);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::PushResponse response;
  return raw.stub->Push(&context, request, &response);
}

// `bytes` sent to the Push method as they are, through a generic stub.
grpc::Status RawPushBytes(RawServer& raw, const std::string& bytes) {
  grpc::GenericStub stub(raw.channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(bytes.data(), bytes.size());
  const grpc::ByteBuffer request(&slice, 1);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/cairn.v1.ParameterService/Push", request, &cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, &cq);
  void* tag = nullptr;
  bool ok = false;
  REQUIRE(cq.Next(&tag, &ok));
  CHECK(tag == &cq);
  return status;
}

TEST_CASE("bad requests are rejected with the right code and change nothing",
          "[integration][shard][bad_input]") {
  auto cluster = TestCluster::Start("bad_input", JobYaml(1, R"(
  - name: dense4
    kind: dense
    shape: [4]
    optimizer: {type: sgd, learning_rate: 0.1}
    init: {type: constant, value: 1.0}
  - name: emb
    kind: sparse
    width: 2
    optimizer: {type: adagrad, learning_rate: 0.1, epsilon: 0.0, initial_accumulator: 0.0}
    init: {type: zeros}
  - name: w42
    kind: dense
    shape: [4, 2]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: constant, value: 1.0}
  - name: big
    kind: dense
    shape: [100000]
    chunk_size: 10000
    optimizer: {type: sgd, learning_rate: 0.5}
    init: {type: constant, value: 1.0}
)", "asp"), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> client = ConnectWorker(**cluster);
  RawServer raw = ConnectRaw(**cluster, 0);
  auto w42_values = [&] {
    std::vector<float> v(8);
    REQUIRE(client->PullDense({{"w42", absl::MakeSpan(v)}}).get().ok());
    return v;
  };
  const std::vector<float> ones(8, 1.0f);
  REQUIRE(w42_values() == ones);
  uint64_t seq = 1000;

  auto dense_values = [&] {
    std::vector<float> v(4);
    REQUIRE(client->PullDense({{"dense4", absl::MakeSpan(v)}}).get().ok());
    return v;
  };
  const std::vector<float> before = dense_values();
  REQUIRE(before == std::vector<float>{1, 1, 1, 1});

  SECTION("unknown table") {
    grpc::Status s = RawPush(raw, "nope", 9, {0}, {1, 1, 1, 1}, ++seq, raw.version);
    CHECK(s.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK_THAT(s.error_message(), Catch::Contains("nope"));
  }
  SECTION("wrong value length for the keys") {
    grpc::Status s = RawPush(raw, "dense4", 0, {0}, {1, 1, 1}, ++seq, raw.version);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("dense4"));
    CHECK_THAT(s.error_message(), Catch::Contains("12 bytes"));
  }
  SECTION("key out of range") {
    grpc::Status s = RawPush(raw, "dense4", 0, {1}, {1, 1, 1, 1}, ++seq, raw.version);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("key 1 out of range"));
  }
  SECTION("NaN and Inf are rejected by default") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    grpc::Status s = RawPush(raw, "dense4", 0, {0}, {nan, 1, 1, 1}, ++seq, raw.version);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("not finite"));
    s = RawPush(raw, "emb", 1, {10}, {std::numeric_limits<float>::infinity(), 0}, ++seq,
                raw.version);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("key 10"));
  }
  SECTION("a NaN deep in a push that arrives in many slices is found, and nothing applied") {
    // 400 KB of values: gRPC hands the server several slices, which it
    // joins (a dense table) and checks before anything is applied.
    const std::vector<Key> chunks = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    std::vector<float> g(100000, 1.0f);
    g[95001] = std::numeric_limits<float>::quiet_NaN();
    grpc::Status s = RawPush(raw, "big", 3, chunks, g, ++seq, raw.version, {100000});
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(),
               Catch::Contains("table=big key 9: gradient value nan at offset 95001"));
    std::vector<float> big(100000);
    REQUIRE(client->PullDense({{"big", absl::MakeSpan(big)}}).get().ok());
    CHECK(big == std::vector<float>(100000, 1.0f));
    g[95001] = 1.0f;
    g[0] = std::numeric_limits<float>::infinity();
    s = RawPush(raw, "big", 3, chunks, g, ++seq, raw.version, {100000});
    CHECK_THAT(s.error_message(), Catch::Contains("table=big key 0: gradient value inf"));
    g[0] = 1.0f;
    g[99999] = 2.0f;
    REQUIRE(RawPush(raw, "big", 3, chunks, g, ++seq, raw.version, {100000}).ok());
    REQUIRE(client->PullDense({{"big", absl::MakeSpan(big)}}).get().ok());
    CHECK(big[0] == 0.5f);
    CHECK(big[95001] == 0.5f);
    CHECK(big[99999] == 0.0f);
  }
  SECTION("a sparse push's rows read where they arrived: a NaN deep in them refuses it whole") {
    // 400 KB of rows in many slices, at any alignment: checked and applied
    // from there (server/shard/piece_rows.h), rows cut by a slice's end
    // put together alone.
    std::vector<Key> keys(50000);
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = 1000 + (i * 7919) % 50000;  // unsorted
    std::vector<float> g(keys.size() * 2, 0.25f);
    g[2 * 40001 + 1] = std::numeric_limits<float>::quiet_NaN();
    grpc::Status s = RawPush(raw, "emb", 1, keys, g, ++seq, raw.version);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(),
               Catch::Contains(absl::StrCat("table=emb key ", keys[40001],
                                            ": gradient value nan at offset 80003")));
    std::vector<float> rows(keys.size() * 2);
    REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(rows)).get().ok());
    CHECK(rows == std::vector<float>(rows.size(), 0.0f));
    // Adagrad from a zero accumulator, epsilon 0: one step moves each
    // value by the learning rate against its gradient's sign.
    g[2 * 40001 + 1] = -0.5f;
    REQUIRE(RawPush(raw, "emb", 1, keys, g, ++seq, raw.version).ok());
    REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(rows)).get().ok());
    size_t wrong = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const float expected = i == 2 * 40001 + 1 ? 0.1f : -0.1f;
      if (std::fabs(rows[i] - expected) > 1e-6f) ++wrong;
    }
    CHECK(wrong == 0);
  }
  SECTION("bytes that are not a PushRequest are refused, naming where they stop") {
    v1::PushRequest request;
    request.set_map_version(raw.version);
    request.set_sequence(++seq);
    v1::TableValues* tv = request.add_tables();
    tv->set_table("dense4");
    tv->set_keys(KeysToBytes({0}));
    tv->set_values(FloatsToBytes({1, 1, 1, 1}));
    const std::string wire = request.SerializeAsString();
    grpc::Status s = RawPushBytes(raw, wire.substr(0, wire.size() - 3));  // cut in the values
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(),
               Catch::Contains("push: the request (a cairn.v1.PushRequest) is malformed: "
                               "a table's values end early"));
  }
  SECTION("B18: a gradient of the same element count but another shape is refused") {
    // Worker 0 pushes shape [8], worker 1 (here the same raw channel) [2,4].
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{8}, std::vector<int64_t>{2, 4}}) {
      grpc::Status s = RawPush(raw, "w42", 2, {0}, std::vector<float>(8, 1.0f), ++seq,
                               raw.version, shape);
      CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
      CHECK_THAT(s.error_message(), Catch::Contains("table=w42"));
      CHECK_THAT(s.error_message(), Catch::Contains("shape mismatch: expected [4,2], got [" +
                                                    absl::StrJoin(shape, ",") + "]"));
    }
    // The client library carries the caller's shape too.
    const std::vector<float> grad(8, 1.0f);
    absl::Status s = client->PushDense({{"w42", grad, {2, 4}}}).get();
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("expected [4,2], got [2,4]"));
    CHECK(w42_values() == ones);
  }
  SECTION("B18: float64 values of the same byte size are refused, and so is no dtype") {
    // Two doubles take the 16 bytes of dense4's four floats.
    const double d[2] = {0.5, 0.25};
    std::vector<float> as_floats(4);
    std::memcpy(as_floats.data(), d, sizeof(d));
    grpc::Status s = RawPush(raw, "dense4", 0, {0}, as_floats, ++seq, raw.version, {2},
                             v1::DTYPE_FLOAT64);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("dense4"));
    CHECK_THAT(s.error_message(), Catch::Contains("dtype mismatch: expected float32, float16 or bfloat16, got float64"));
    s = RawPush(raw, "dense4", 0, {0}, {1, 1, 1, 1}, ++seq, raw.version, {4},
                v1::DTYPE_UNSPECIFIED);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("dtype"));
  }
  SECTION("a sparse push whose shape does not match its keys is refused") {
    grpc::Status s = RawPush(raw, "emb", 1, {10}, {1, 1}, ++seq, raw.version, {3, 2});
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("expected [1,2], got [3,2]"));
  }
  SECTION("stale partition-map version carries the current one") {
    grpc::Status s = RawPush(raw, "dense4", 0, {0}, {1, 1, 1, 1}, ++seq, 0);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    REQUIRE(StaleMapVersion(s).has_value());
    CHECK(*StaleMapVersion(s) == raw.version);
  }
  SECTION("an empty push is accepted and changes nothing") {
    grpc::Status s = RawPush(raw, "dense4", 0, {}, {}, ++seq, raw.version);
    CHECK(s.ok());
  }
  SECTION("a retried push (same sequence) is applied once") {
    REQUIRE(RawPush(raw, "dense4", 0, {0}, {1, 1, 1, 1}, 77, raw.version).ok());
    REQUIRE(RawPush(raw, "dense4", 0, {0}, {1, 1, 1, 1}, 77, raw.version).ok());
    const std::vector<float> after = dense_values();
    for (float v : after) CHECK_THAT(v, Catch::Matchers::WithinAbs(0.9, 1e-7));
    return;
  }
  // Rejected (or empty) requests left every value as it was; the server still serves.
  CHECK(dense_values() == before);
  CHECK(w42_values() == ones);
  std::vector<float> rows(2);
  REQUIRE(client->PullSparse("emb", std::vector<Key>{10}, absl::MakeSpan(rows)).get().ok());
  CHECK(rows == std::vector<float>{0, 0});
  CHECK((*cluster)->server(0).Running());
}

TEST_CASE("duplicate and unsorted keys in one sparse push add up before Adagrad (B07)",
          "[integration][shard][cases]") {
  auto cluster = TestCluster::Start("b07", JobYaml(2, R"(
  - name: emb
    kind: sparse
    width: 2
    optimizer: {type: adagrad, learning_rate: 0.1, epsilon: 0.0, initial_accumulator: 0.0}
    init: {type: zeros}
)", "asp"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> client = ConnectWorker(**cluster);
  const Key a = 3, b = (Key{1} << 63) + 7;
  // Keys [b, a, b] with gradients [1,1], [2,2], [3,3]: b gets 4 (acc 16,
  // w = -0.1 * 4 / 4 = -0.1), a gets 2 (acc 4, w = -0.1 * 2 / 2 = -0.1).
  REQUIRE(client->PushSparse("emb", std::vector<Key>{b, a, b}, std::vector<float>{1, 1, 2, 2, 3, 3})
              .get()
              .ok());
  std::vector<float> rows(4);
  REQUIRE(client->PullSparse("emb", std::vector<Key>{a, b}, absl::MakeSpan(rows)).get().ok());
  for (float v : rows) CHECK(v == -0.1f);
  CHECK(client->Finish().ok());
}

}  // namespace
}  // namespace cairn
