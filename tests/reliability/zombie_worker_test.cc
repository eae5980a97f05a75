// fault scenario T5 (b): a worker paused past its lease (SIGSTOP) is declared
// dead, the others go on, and when it wakes (SIGCONT) nothing it pushes lands:
// zombie pushes accepted = 0. Two witnesses:
//  - the zombie's own pushes: every push it invokes after waking must fail,
//    and the oracle must find none of them applied;
//  - a push sent by hand over gRPC as the dead worker to every group's
//    primary, which each must refuse, naming the worker.
// Real coordinator, server and chaos workers on loopback. One server: a
// push spanning several servers is not atomic, so a worker stopped between
// its RPCs leaves an unacknowledged push applied in part, which the oracle
// could not tell from a fencing failure; on one server each push is one RPC.
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/bytes.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "grpcpp/grpcpp.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/checkpoint_job.h"
#include "tests/reliability/history.h"
#include "tests/reliability/oracle.h"
#include "tests/testing/process.h"

namespace cairn::reliability {
namespace {

using testing::ExitStatus;
using testing::Subprocess;

constexpr int kZombie = 1;

std::string JobYaml(const std::string& mode) {
  return absl::StrCat(R"(
cluster:
  servers: 1
  workers: 2
  partitions: 8
  lease_timeout: 2s
  heartbeat_interval: 200ms
  startup_timeout: 30s
  on_worker_loss: continue
rpc:
  deadline: 10s
consistency:
  mode: )", mode, mode == "ssp" ? "\n  staleness: 2" : "", R"(
tables:
)", WorkloadTablesYaml());
}

std::unique_ptr<Subprocess> SpawnWorker(const testing::TestCluster& cluster, int id,
                                        int64_t steps, const std::string& history_dir) {
  auto worker = SpawnChaosWorker(cluster, id, steps, history_dir);
  REQUIRE(worker.ok());
  return *std::move(worker);
}

size_t CountLines(const std::string& path) {
  const std::string text = testing::ReadFileOrEmpty(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Sends one push of emb row `key` as `worker` to the primary of every
// replica group in the current map; returns each answer.
std::vector<grpc::Status> PushAsWorkerToEveryPrimary(const testing::TestCluster& cluster,
                                                     uint32_t worker, uint64_t key) {
  CoordinatorClient coordinator(cluster.coordinator_address(), 64 << 20);
  auto map = coordinator.GetPartitionMap(absl::Seconds(10));
  REQUIRE(map.ok());
  std::map<uint32_t, uint32_t> primary_of_group;
  for (const v1::PartitionAssignment& a : map->map().assignments()) {
    primary_of_group[a.group()] = a.primary();
  }
  std::map<uint32_t, std::string> address;
  for (const v1::Member& m : map->map().servers()) address[m.id()] = m.address();
  std::vector<grpc::Status> answers;
  for (const auto& [group, primary] : primary_of_group) {
    v1::PushRequest push;
    push.set_map_version(map->map().version());
    push.set_worker_id(worker);
    push.set_incarnation(1);
    push.set_sequence(1'000'000);  // never used by the worker itself
    push.set_clock(0);
    push.set_group(group);
    v1::TableValues* tv = push.add_tables();
    tv->set_table_id(1);
    tv->set_table("emb");
    tv->set_keys(KeysToBytes({key}));
    tv->set_values(FloatsToBytes({7.0f, 7.0f, 7.0f, 7.0f}));
    tv->add_shape(1);
    tv->add_shape(4);
    tv->set_dtype(v1::DTYPE_FLOAT32);
    auto stub = v1::ParameterService::NewStub(MakeChannel(address[primary], 64 << 20));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::PushResponse response;
    answers.push_back(stub->Push(&context, push, &response));
  }
  return answers;
}

TEST_CASE("RELIABILITY T5: a worker paused past its lease is declared dead and nothing it "
          "pushes after it wakes is accepted",
          "[reliability][integration][fencing]") {
  const std::string mode = GENERATE(std::string("asp"), std::string("ssp"));
  INFO("consistency " << mode);
  const Workload w = CheckpointWorkload();
  auto cluster = testing::TestCluster::Start(absl::StrCat("zombie_", mode), JobYaml(mode), 1);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  testing::TestCluster& c = **cluster;
  const std::string history_dir = c.dir() + "/history";
  std::filesystem::create_directories(history_dir);

  // Worker 0 trains 150 steps; the zombie would go on far longer.
  std::unique_ptr<Subprocess> live = SpawnWorker(c, 0, 150, history_dir);
  std::unique_ptr<Subprocess> zombie = SpawnWorker(c, kZombie, 1'000'000, history_dir);
  const std::string zombie_history = absl::StrCat(history_dir, "/worker-", kZombie, ".jsonl");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (CountLines(zombie_history) < 20 && absl::Now() < deadline && zombie->Running()) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  INFO(c.Logs() << zombie->ReadStderr());
  REQUIRE(CountLines(zombie_history) >= 20);  // it pushed for a while

  REQUIRE(zombie->Signal(SIGSTOP).ok());
  const absl::Time stopped = absl::Now();
  REQUIRE(c.coordinator()
              .WaitForStderr(absl::StrCat("worker ", kZombie, " lost at clock"), absl::Seconds(20))
              .ok());
  const absl::Duration to_dead = absl::Now() - stopped;
  absl::SleepFor(absl::Milliseconds(500));  // the servers install the map without it

  // By hand: the dead worker's push is refused by every primary.
  const std::vector<uint64_t> keys = SparseKeyUniverse(w);
  for (const grpc::Status& answer : PushAsWorkerToEveryPrimary(c, kZombie, keys.front())) {
    CHECK(answer.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(absl::StrContains(answer.error_message(),
                            absl::StrCat("push from worker ", kZombie, " refused")));
  }

  const int64_t woke_ms = absl::ToUnixMillis(absl::Now());
  REQUIRE(zombie->Signal(SIGCONT).ok());
  absl::StatusOr<ExitStatus> zombie_end = zombie->Wait(absl::Seconds(30));
  REQUIRE(zombie_end.ok());
  INFO("zombie: " << zombie_end->ToString() << "\n" << zombie->ReadStderr());
  CHECK(zombie_end->code != 0);  // it learns it is dead and stops
  absl::StatusOr<ExitStatus> live_end = live->Wait(absl::Seconds(60));
  REQUIRE(live_end.ok());
  INFO("worker 0: " << live->ReadStderr());
  CHECK(live_end->ToString() == "exit code 0");

  absl::StatusOr<std::vector<HistoryRecord>> history = ReadHistoryDir(history_dir);
  INFO(history.status().message());
  REQUIRE(history.ok());
  // Pushes the zombie invoked after waking must not land: recorded as failed,
  // the oracle counts any of them found applied as unexpected.
  int woken_pushes = 0, woken_acked = 0;
  for (HistoryRecord& r : *history) {
    if (r.worker != kZombie || r.t_invoke_ms < woke_ms) continue;
    ++woken_pushes;
    woken_acked += r.outcome == Outcome::kOk;
    r.outcome = Outcome::kFail;
  }
  absl::StatusOr<JobValues> final_values = ReadFinalValues(c, w);
  INFO(final_values.status().message());
  REQUIRE(final_values.ok());
  const OracleReport report = Check(w, *history, *final_values);
  INFO(report.ToString());
  std::cout << "T5 zombie (" << mode << "): declared dead " << absl::FormatDuration(to_dead)
            << " after SIGSTOP (lease 2s); pushes invoked after waking " << woken_pushes
            << ", acknowledged " << woken_acked << ", applied " << report.unexpected
            << "; lost " << report.lost << ", duplicates " << report.duplicates << std::endl;
  CHECK(woken_acked == 0);
  CHECK(report.unexpected == 0);  // zombie pushes accepted = 0
  CHECK(report.lost == 0);
  CHECK(report.duplicates == 0);
  CHECK(report.checksum_mismatches == 0);
  CHECK(report.unexplained.ok());  // the hand-made push is nowhere either
  // Worker 0 trained to its end: all 150 steps of both tables acknowledged.
  int live_acked = 0;
  for (const HistoryRecord& r : *history) live_acked += r.worker == 0 && r.outcome == Outcome::kOk;
  CHECK(live_acked == 150 * 2);
}

}  // namespace
}  // namespace cairn::reliability
