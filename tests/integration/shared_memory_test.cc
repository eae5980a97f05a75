// The same-host path (docs/shared-memory.md) against real servers: values
// through a shared region are bit for bit those through gRPC; a region too
// small for a request sends that request through gRPC; a server refuses
// regions it cannot trust and requests that name what is not theirs; the
// client runs no gRPC callback threads (worker/client/call_queue.h); a
// buffer the client lends is read and written in place, and spoiled by a
// call that failed.
#include <fcntl.h>
#include <signal.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/grpc_util.h"
#include "common/shared_region.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/integration/connect_workers.h"
#include "tests/integration/same_host.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

std::string Yaml(const std::string& rpc) {
  return absl::StrCat(R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 4
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 60s
rpc:
  deadline: 30s
)", rpc, R"(
consistency:
  mode: asp
tables:
  - name: big
    kind: dense
    shape: [600, 1000]
    optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}
    init: {type: uniform, scale: 1, seed: 3}
  - name: half
    kind: dense
    shape: [70000]
    wire_dtype: bf16
    optimizer: {type: sgd, learning_rate: 0.25}
  - name: emb
    kind: sparse
    width: 64
    optimizer: {type: adagrad, learning_rate: 0.1}
)");
}

struct Pulled {
  std::vector<float> big, half, emb;
  ClientStats stats;
};

// Three rounds of pushes to every table, then a pull of all of them.
Pulled Train(const std::string& name, const std::string& rpc, bool expect_regions) {
  auto cluster = TestCluster::Start(name, Yaml(rpc), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto client = testing::Connect(**cluster, 0);
  INFO(client.status().message());
  REQUIRE(client.ok());
  Client& c = **client;
  if (expect_regions) REQUIRE(testing::WaitForRegions(c, 2));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint64_t> keys(3000);
  for (auto& k : keys) k = rng();
  keys[5] = keys[17];  // a repeated key: its gradients are summed (B07)
  for (int round = 0; round < 3; ++round) {
    std::vector<float> g_big(600000), g_half(70000), g_emb(keys.size() * 64);
    for (float& v : g_big) v = u(rng);
    for (float& v : g_half) v = u(rng);
    for (float& v : g_emb) v = u(rng);
    INFO("round " << round);
    REQUIRE(c.PushDense({{"big", g_big}, {"half", g_half}}).get().ok());
    REQUIRE(c.PushSparse("emb", keys, g_emb).get().ok());
  }
  Pulled out;
  out.big.resize(600000);
  out.half.resize(70000);
  out.emb.resize(keys.size() * 64);
  REQUIRE(c.PullDense({{"big", absl::MakeSpan(out.big)}, {"half", absl::MakeSpan(out.half)}})
              .get()
              .ok());
  REQUIRE(c.PullSparse("emb", keys, absl::MakeSpan(out.emb)).get().ok());
  out.stats = c.Stats();
  return out;
}


}  // namespace

TEST_CASE("values through shared regions equal those through gRPC bit for bit, and a region too "
          "small for a request sends it through gRPC",
          "[integration][shared_memory]") {
  const Pulled grpc = Train("shm_off", "  shared_memory: false\n", false);
  CHECK(grpc.stats.shared_memory_regions == 0);
  CHECK(grpc.stats.shared_memory_requests == 0);

  const Pulled shared = Train("shm_on", "", true);
  INFO("through regions: " << shared.stats.shared_memory_requests << " requests, "
                           << shared.stats.shared_memory_bytes << " bytes");
  CHECK(shared.stats.shared_memory_regions == 2);
  // 3 rounds of 2.4 MB + 140 KB (bf16) + 768 KB pushed, and one pull of the
  // same: every value byte went through the regions.
  CHECK(shared.stats.shared_memory_bytes == 4 * (2400000 + 140000 + 768000));
  CHECK(testing::BitEqual(shared.big, grpc.big));
  CHECK(testing::BitEqual(shared.half, grpc.half));
  CHECK(testing::BitEqual(shared.emb, grpc.emb));

  // Through a region, requests are cut at 2 MiB (the default
  // shared_memory_split_size), not 1 MiB: fewer requests, the same bytes
  // and values.
  const Pulled small = Train("shm_split", "  shared_memory_split_size: 1MiB\n", true);
  INFO("cut at 1 MiB: " << small.stats.shared_memory_requests << " requests");
  CHECK(small.stats.shared_memory_bytes == shared.stats.shared_memory_bytes);
  CHECK(small.stats.shared_memory_requests > shared.stats.shared_memory_requests);
  CHECK(testing::BitEqual(small.big, grpc.big));
  CHECK(testing::BitEqual(small.half, grpc.half));
  CHECK(testing::BitEqual(small.emb, grpc.emb));

  // 1 MiB regions: a full 1 MiB piece does not fit and goes through gRPC,
  // the smaller ones through the region.
  const Pulled tight = Train("shm_tight", "  shared_memory_size: 1MiB\n", true);
  CHECK(tight.stats.shared_memory_requests > 0);
  CHECK(tight.stats.shared_memory_bytes < shared.stats.shared_memory_bytes);
  CHECK(testing::BitEqual(tight.big, grpc.big));
  CHECK(testing::BitEqual(tight.half, grpc.half));
  CHECK(testing::BitEqual(tight.emb, grpc.emb));
}

namespace {

grpc::Status Offer(v1::ParameterService::Stub& stub, const v1::OpenRegionRequest& offer,
                   v1::OpenRegionResponse* answer) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  return stub.OpenRegion(&context, offer, answer);
}

v1::OpenRegionRequest OfferOf(const SharedRegion& region, uint32_t worker) {
  v1::OpenRegionRequest offer;
  offer.set_worker_id(worker);
  offer.set_pid(getpid());
  offer.set_fd(region.fd());
  offer.set_bytes(region.size());
  offer.set_token(region.token());
  return offer;
}

grpc::Status PushFrom(v1::ParameterService::Stub& stub, uint32_t worker, uint64_t region,
                      uint64_t offset, uint64_t length) {
  v1::PushRequest push;
  push.set_worker_id(worker);
  push.set_sequence(1);
  v1::TableValues* t = push.add_tables();
  t->set_table("big");
  v1::SharedRange* r = t->mutable_shared();
  r->set_region(region);
  r->set_offset(offset);
  r->set_length(length);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::PushResponse response;
  return stub.Push(&context, push, &response);
}

}  // namespace

TEST_CASE("a server refuses a region it cannot trust, and a push naming another worker's "
          "region, an unknown one or bytes outside it",
          "[integration][shared_memory]") {
  auto cluster = TestCluster::Start("shm_refuse", Yaml(""), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto stub = v1::ParameterService::NewStub(
      MakeChannel((*cluster)->server_address(0), 64 << 20, absl::Seconds(5)));
  auto region = SharedRegion::Create(1 << 20);
  REQUIRE(region.ok());
  v1::OpenRegionResponse answer;

  SECTION("refused offers") {
    v1::OpenRegionRequest offer = OfferOf(**region, 0);
    offer.set_token(std::string(SharedRegion::kTokenBytes, 'x'));
    grpc::Status s = Offer(*stub, offer, &answer);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK_THAT(s.error_message(), Catch::Contains("token"));

    offer = OfferOf(**region, 0);
    offer.set_bytes((*region)->size() * 2);
    s = Offer(*stub, offer, &answer);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK_THAT(s.error_message(), Catch::Contains("not the"));

    offer = OfferOf(**region, 0);
    offer.set_fd(100000);  // no such descriptor
    s = Offer(*stub, offer, &answer);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK_THAT(s.error_message(), Catch::Contains("cannot open"));

    // A memfd that could shrink under the server's reads (SIGBUS).
    const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
    REQUIRE(unsealed >= 0);
    REQUIRE(ftruncate(unsealed, 1 << 20) == 0);
    offer = OfferOf(**region, 0);
    offer.set_fd(unsealed);
    s = Offer(*stub, offer, &answer);
    close(unsealed);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK_THAT(s.error_message(), Catch::Contains("sealed"));
  }

  SECTION("pushes naming what is not theirs") {
    REQUIRE(Offer(*stub, OfferOf(**region, 0), &answer).ok());
    const uint64_t id = answer.region();
    grpc::Status s = PushFrom(*stub, 1, id, SharedRegion::kHeaderBytes, 4096);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("belongs to worker 0"));

    s = PushFrom(*stub, 0, id + 1000, SharedRegion::kHeaderBytes, 4096);
    CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK_THAT(s.error_message(), Catch::Contains("unknown to this server"));

    s = PushFrom(*stub, 0, id, (*region)->size() - 1024, 4096);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains("table \"big\""));
    CHECK_THAT(s.error_message(), Catch::Contains("not within the shared region"));

    s = PushFrom(*stub, 0, id, 0, 16);  // the token
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }

  SECTION("one incarnation keeps up to 4 regions, another incarnation replaces them") {
    // Several channels of one worker life to one server each offer a region:
    // all stay known, up to 4; then the oldest goes.
    auto known = [&](uint64_t id) {
      const grpc::Status s = PushFrom(*stub, 0, id, SharedRegion::kHeaderBytes, 4096);
      return s.error_message().find("unknown to this server") == std::string::npos;
    };
    std::vector<uint64_t> ids;
    for (int i = 0; i < 5; ++i) {
      v1::OpenRegionRequest offer = OfferOf(**region, 0);
      offer.set_incarnation(7);
      REQUIRE(Offer(*stub, offer, &answer).ok());
      ids.push_back(answer.region());
    }
    CHECK_FALSE(known(ids[0]));
    for (int i = 1; i < 5; ++i) CHECK(known(ids[i]));
    v1::OpenRegionRequest next_life = OfferOf(**region, 0);
    next_life.set_incarnation(8);
    REQUIRE(Offer(*stub, next_life, &answer).ok());
    for (int i = 1; i < 5; ++i) CHECK_FALSE(known(ids[i]));
    CHECK(known(answer.region()));
  }
}

namespace {

// The names of the threads of process `pid` ("self": this one).
std::vector<std::string> ThreadNames(const std::string& pid = "self") {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

bool HasCallbackThreads(const std::string& pid = "self") {
  const std::vector<std::string> names = ThreadNames(pid);
  return std::count(names.begin(), names.end(), "nexting_thread") > 0;
}

}  // namespace

TEST_CASE("a worker's client runs no gRPC callback threads, which would poll its calls' sockets "
          "beside the caller that waits for them",
          "[integration][shared_memory]") {
  std::string yaml = Yaml("");
  yaml.replace(yaml.find("workers: 1"), 10, "workers: 2");
  auto cluster = TestCluster::Start("no_callback_threads", yaml, 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  // Every kind of call the client makes: the start-up barrier's watch (the
  // first worker waits there for the second), the regions' offers, pushes
  // and pulls waited for on the caller's queue and not, ticks.
  auto first = std::async(std::launch::async, [&] { return testing::Connect(**cluster, 0); });
  REQUIRE(first.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  auto second = testing::Connect(**cluster, 1);
  INFO(second.status().message());
  REQUIRE(second.ok());
  auto client = first.get();
  INFO(client.status().message());
  REQUIRE(client.ok());
  Client& c = **client;
  REQUIRE(testing::WaitForRegions(c, 2));
  std::vector<float> g(70000, 0.5f), half(70000);
  REQUIRE(c.PushDense({{"half", g}}).get().ok());
  REQUIRE(c.PullDense({{"half", absl::MakeSpan(half)}}).get().ok());
  REQUIRE(c.PushAndWait({{"half", g}}, {}).ok());
  REQUIRE(c.PullAndWait({{"half", absl::MakeSpan(half)}}, {}).ok());
  REQUIRE(c.Clock().ok());
  REQUIRE(c.PushAndClock({{"half", g}}, {}).ok());
  CHECK(c.Stats().shared_memory_requests > 0);
  CHECK_FALSE(HasCallbackThreads());
  // Nor does a server, which also forwarded those pushes to its backup
  // (replication 2), watches the coordinator's map and serves grpc.health.v1.
  for (int i = 0; i < 2; ++i) {
    auto health = grpc::health::v1::Health::NewStub(
        MakeChannel((*cluster)->server_address(i), 64 << 20));
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse answer;
    REQUIRE(health->Check(&context, request, &answer).ok());
    CHECK(answer.status() == grpc::health::v1::HealthCheckResponse::SERVING);
    CHECK_FALSE(HasCallbackThreads(std::to_string((*cluster)->server(i).pid())));
  }

  // The check sees them where they run: after one call through gRPC's
  // callback API in this process.
  auto stub = v1::ParameterService::NewStub(MakeChannel((*cluster)->server_address(0), 64 << 20));
  grpc::ClientContext context;
  v1::StatsRequest request;
  v1::StatsResponse stats;
  std::promise<grpc::Status> done;
  stub->async()->Stats(&context, &request, &stats,
                       [&done](grpc::Status s) { done.set_value(std::move(s)); });
  REQUIRE(done.get_future().get().ok());
  CHECK(HasCallbackThreads());
}

namespace {

// One server; two tables alike (zeros: a seed mixes in the table's name), one
// pushed and pulled through lent memory, the other through the caller's own. A lease long enough to outlast a
// stopped server.
std::string LendYaml() {
  return R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: 1
  partitions: 4
  lease_timeout: 60s
  heartbeat_interval: 200ms
  startup_timeout: 60s
consistency:
  mode: asp
tables:
  - name: lent
    kind: dense
    shape: [600, 1000]
    optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}
    init: {type: zeros}
  - name: own
    kind: dense
    shape: [600, 1000]
    optimizer: {type: sgd, learning_rate: 0.5, momentum: 0.9}
    init: {type: zeros}
)";
}

absl::Span<float> Floats(SharedBuffer& buffer) {
  return absl::Span<float>(reinterpret_cast<float*>(buffer.bytes().data()),
                           buffer.bytes().size() / sizeof(float));
}

}  // namespace

TEST_CASE("a buffer the client lends is pushed from and pulled into in place, to the bits of the "
          "caller's own memory, and a call that failed spoils it",
          "[integration][shared_memory]") {
  auto cluster = TestCluster::Start("shm_lend", LendYaml(), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto client = testing::Connect(**cluster, 0, absl::Seconds(30), /*rpc_deadline=*/absl::Seconds(2));
  INFO(client.status().message());
  REQUIRE(client.ok());
  Client& c = **client;
  REQUIRE(testing::WaitForRegions(c, 1));
  constexpr size_t kFloats = 600000;
  std::unique_ptr<SharedBuffer> grads = c.LendSharedBuffer(kFloats * sizeof(float));
  std::unique_ptr<SharedBuffer> values = c.LendSharedBuffer(kFloats * sizeof(float));
  REQUIRE(grads != nullptr);
  REQUIRE(values != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(grads->bytes().data()) % 64 == 0);
  // More than a quarter of the (default 64 MiB) region is not lent.
  CHECK(c.LendSharedBuffer(17 << 20) == nullptr);

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> own_grads(kFloats), own_values(kFloats);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    for (float& x : own_grads) x = u(rng);
    std::copy(own_grads.begin(), own_grads.end(), Floats(*grads).begin());
    const uint64_t before = c.Stats().shared_memory_in_place;
    const uint64_t requests_before = c.Stats().shared_memory_requests;
    REQUIRE(c.PushDense({{"lent", Floats(*grads)}}).get().ok());
    REQUIRE(c.PushDense({{"own", own_grads}}).get().ok());
    REQUIRE(c.PullDense({{"lent", Floats(*values)}}).get().ok());
    REQUIRE(c.PullDense({{"own", absl::MakeSpan(own_values)}}).get().ok());
    // 2.4 MB each way. In lent memory only keys travel: one request each,
    // in place. The caller's own memory went through the region's blocks,
    // cut at 2 MiB: two requests each.
    CHECK(c.Stats().shared_memory_in_place == before + 2);
    CHECK(c.Stats().shared_memory_requests == requests_before + 2 + 4);
    const std::vector<float> pulled(Floats(*values).begin(), Floats(*values).end());
    CHECK(testing::BitEqual(pulled, own_values));
  }
  CHECK_FALSE(grads->spoiled());
  CHECK_FALSE(values->spoiled());

  // A push whose server stopped answering fails once every attempt timed
  // out; the server may still read the buffer when it wakes: spoiled.
  REQUIRE(cluster.value()->server(0).Signal(SIGSTOP).ok());
  const absl::Status failed = c.PushDense({{"lent", Floats(*grads)}}).get();
  REQUIRE(cluster.value()->server(0).Signal(SIGCONT).ok());
  CHECK_FALSE(failed.ok());
  CHECK(grads->spoiled());
  CHECK_FALSE(values->spoiled());
  // From then on its values go through the region's own blocks.
  const uint64_t before = c.Stats().shared_memory_in_place;
  const absl::Status again = c.PushDense({{"lent", Floats(*grads)}}).get();
  INFO(again.message());
  CHECK(again.ok());
  CHECK(c.Stats().shared_memory_in_place == before);

  // A pull whose server stopped past its deadline reads again: into the
  // caller's own memory it gets its values once the server wakes.
  auto& server = cluster.value()->server(0);
  REQUIRE(server.Signal(SIGSTOP).ok());
  std::future<absl::Status> resumed = std::async(std::launch::async, [&server] {
    absl::SleepFor(absl::Seconds(3));  // 1.5 deadlines
    return server.Signal(SIGCONT);
  });
  const absl::Status late = c.PullDense({{"own", absl::MakeSpan(own_values)}}).get();
  REQUIRE(resumed.get().ok());
  INFO(late.message());
  CHECK(late.ok());
  std::vector<float> now(kFloats);
  REQUIRE(c.PullDense({{"own", absl::MakeSpan(now)}}).get().ok());
  CHECK(testing::BitEqual(now, own_values));
  // Into lent memory, which the server may still write once it wakes, it
  // is not read again: it fails at its deadline and spoils the buffer.
  REQUIRE(server.Signal(SIGSTOP).ok());
  const absl::Status lost = c.PullDense({{"lent", Floats(*values)}}).get();
  REQUIRE(server.Signal(SIGCONT).ok());
  CHECK(absl::IsDeadlineExceeded(lost));
  CHECK_THAT(std::string(lost.message()), Catch::Contains("1 attempt timed out"));
  CHECK(values->spoiled());
}

TEST_CASE("a push sent while its gradient is written ends in the bits of one sent written, and "
          "one whose writing stalls is refused whole and applied once when sent again",
          "[integration][shared_memory]") {
  std::string yaml = LendYaml();
  yaml.replace(yaml.find("mode: asp"), 9, "mode: bsp");
  auto cluster = TestCluster::Start("shm_stream", yaml, 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  auto client =
      testing::Connect(**cluster, 0, absl::Seconds(30), /*rpc_deadline=*/absl::Seconds(10));
  INFO(client.status().message());
  REQUIRE(client.ok());
  Client& c = **client;
  REQUIRE(testing::WaitForRegions(c, 1));
  constexpr size_t kFloats = 600000;
  // The gradient, then its count of bytes written.
  std::unique_ptr<SharedBuffer> grads = c.LendSharedBuffer(kFloats * sizeof(float) + 8);
  std::unique_ptr<SharedBuffer> values = c.LendSharedBuffer(kFloats * sizeof(float));
  REQUIRE(grads != nullptr);
  REQUIRE(values != nullptr);
  const absl::Span<float> lent_grads = Floats(*grads).subspan(0, kFloats);
  const absl::Span<float> lent_values = Floats(*values);
  auto* count = reinterpret_cast<std::atomic<uint64_t>*>(grads->bytes().data() +
                                                         kFloats * sizeof(float));

  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> own_grads(kFloats), own_values(kFloats);
  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    for (float& x : own_grads) x = u(rng);
    // NaN until written: read early, the push would be refused.
    std::fill(lent_grads.begin(), lent_grads.end(), std::nanf(""));
    // Round 3's writer stops for longer than the server waits
    // (PushStream's 1 s stall bound) after its first block.
    const bool stall = round == 3;
    // Written in blocks from the end, the count of bytes back from there.
    auto write = [&] {
      constexpr size_t kBlocks = 6;
      for (size_t b = kBlocks; b-- > 0;) {
        absl::SleepFor(stall && b == kBlocks - 2 ? absl::Milliseconds(2500)
                                                 : absl::Milliseconds(2));
        const size_t begin = kFloats * b / kBlocks;
        std::copy(own_grads.begin() + begin, own_grads.begin() + kFloats * (b + 1) / kBlocks,
                  lent_grads.begin() + begin);
        count->store((kFloats - begin) * sizeof(float), std::memory_order_release);
      }
      count->store(Client::kAllWritten, std::memory_order_release);
    };
    const uint64_t streamed = c.Stats().streamed_pushes;
    absl::Status pulled;
    const absl::Status pushed =
        c.PushClockAndPull({{"lent", lent_grads}}, {{"lent", lent_values}}, &pulled, [] {},
                           Client::GradientStream{count, write});
    INFO(pushed.message());
    REQUIRE(pushed.ok());
    CHECK(c.Stats().streamed_pushes == streamed + 1);
    // The same gradient, written first, to the other table.
    REQUIRE(c.PushClockAndPull({{"own", own_grads}}, {}, {{"own", absl::MakeSpan(own_values)}},
                               {}, &pulled)
                .ok());
    std::vector<float> now(kFloats);
    REQUIRE(c.PullDense({{"lent", absl::MakeSpan(now)}}).get().ok());
    CHECK(testing::BitEqual(now, own_values));
    // The refused attempt spoiled the lent buffer, as any failed call.
    CHECK(grads->spoiled() == stall);
  }
}

}  // namespace cairn
