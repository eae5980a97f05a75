// The call slot protocol (common/call_slot.h) between its two sides in one
// process over a real shared region: the server's CallSlots
// (server/shard/rpc/call_slots.h) and the worker's CallSlotClient and
// SlotWaits (worker/client/call_slot_client.h).
#include <grpcpp/completion_queue.h>
#include <grpcpp/support/status.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/call_slot.h"
#include "common/shared_region.h"
#include "common/status_conversion.h"
#include "server/shard/rpc/call_slots.h"
#include "worker/client/call_slot_client.h"

namespace cairn {
namespace {

constexpr uint64_t kOffset = SharedRegion::kHeaderBytes;
constexpr uint32_t kWorker = 7;

// What a posted call ended with.
struct Ended {
  std::optional<grpc::Status> status;
  std::string response;
  bool fell_back = false;
};

struct Slot {
  std::shared_ptr<SharedRegion> region;
  std::vector<std::unique_ptr<SlotCall>> taken;
  CallSlots server{[this](std::unique_ptr<SlotCall> call) { taken.push_back(std::move(call)); }};
  std::shared_ptr<CallSlotClient> client;
  grpc::CompletionQueue cq;

  Slot() {
    auto created = SharedRegion::Create(1 << 20);
    REQUIRE(created.ok());
    region = std::move(*created);
    REQUIRE(server.Add(region, kOffset, call_slot::kBytes, kWorker).ok());
    server.SetPolling(true);
  }
  CallSlotHeader* header() const {
    return reinterpret_cast<CallSlotHeader*>(region->data() + kOffset);
  }
  void Connect() { client = std::make_shared<CallSlotClient>(region, kOffset); }
  // Takes the free slot and posts `request` in it.
  void Start(const std::string& request, absl::Duration deadline, Ended* ended) {
    REQUIRE(client->TryAcquire());
    Post(request, deadline, ended);
  }
  // Posts `request` for `deadline` from now; `ended` records the outcome.
  void Post(const std::string& request, absl::Duration deadline, Ended* ended) {
    std::memcpy(client->request_area(), request.data(), request.size());
    client->Post(
        &cq, call_slot::kPush, static_cast<uint32_t>(request.size()), absl::Now() + deadline,
        [ended](const grpc::Status& status, absl::string_view response) {
          ended->status = status;
          ended->response = std::string(response);
        },
        [ended] { ended->fell_back = true; });
  }
};

}  // namespace

TEST_CASE("a posted call is taken by the polling server, answered, and ends on the thread "
          "that drives its queue",
          "[call_slot]") {
  Slot s;
  s.Connect();
  REQUIRE(s.client->TryAcquire());
  CHECK_FALSE(s.client->TryAcquire());  // one call at a time
  Ended ended;
  s.Post("push bytes", absl::Seconds(10), &ended);
  CHECK(SlotWaits::Pending(&s.cq));
  CHECK_FALSE(SlotWaits::Poll(&s.cq));  // posted, not answered
  REQUIRE(s.server.Poll());
  REQUIRE(s.taken.size() == 1);
  CHECK(s.taken[0]->request() == "push bytes");
  CHECK(s.taken[0]->worker_id() == kWorker);
  CHECK(s.taken[0]->method() == call_slot::kPush);
  CHECK(s.taken[0]->deadline() > absl::Now() + absl::Seconds(9));
  CHECK_FALSE(s.server.Poll());  // taken once
  REQUIRE(s.taken[0]->Answer(0, "", "response bytes").ok());
  CHECK_FALSE(ended.status.has_value());  // ends only where the queue is driven
  CHECK(SlotWaits::Poll(&s.cq));
  REQUIRE(ended.status.has_value());
  CHECK(ended.status->ok());
  CHECK(ended.response == "response bytes");
  CHECK_FALSE(ended.fell_back);
  CHECK_FALSE(SlotWaits::Pending(&s.cq));
  CHECK(s.client->TryAcquire());  // free again
  s.client->Release();

  SECTION("an error's code and message reach the worker") {
    Ended failed;
    s.Start("again", absl::Seconds(10), &failed);
    REQUIRE(s.server.Poll());
    REQUIRE(s.taken[1]->Answer(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT),
                               "table w: shape [3] expected", "")
                .ok());
    CHECK(SlotWaits::Poll(&s.cq));
    REQUIRE(failed.status.has_value());
    CHECK(failed.status->error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(failed.status->error_message() == "table w: shape [3] expected");
  }
  SECTION("a stale map's answer keeps its binary details, which the client retries on") {
    Ended stale;
    s.Start("stale", absl::Seconds(10), &stale);
    REQUIRE(s.server.Poll());
    const grpc::Status answer = StaleMapStatus(3, 5);
    REQUIRE(s.taken[1]
                ->Answer(static_cast<int>(answer.error_code()), answer.error_message(), "",
                         answer.error_details())
                .ok());
    CHECK(SlotWaits::Poll(&s.cq));
    REQUIRE(stale.status.has_value());
    CHECK(stale.status->error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(StaleMapVersion(*stale.status) == std::optional<uint64_t>(5));
  }
  SECTION("an answer larger than the slot is refused unwritten") {
    Ended big;
    s.Start("big", absl::Seconds(10), &big);
    REQUIRE(s.server.Poll());
    CHECK(s.taken[1]->Answer(0, "", std::string(call_slot::kAnswerCapacity + 1, 'x')).code() ==
          absl::StatusCode::kInvalidArgument);
    CHECK_FALSE(SlotWaits::Poll(&s.cq));
    REQUIRE(s.taken[1]->Answer(0, "", "small").ok());
    CHECK(SlotWaits::Poll(&s.cq));
    CHECK(big.response == "small");
  }
  SECTION("a call the server drops unanswered ends UNAVAILABLE, which the client retries") {
    Ended dropped;
    s.Start("dropped", absl::Seconds(10), &dropped);
    REQUIRE(s.server.Poll());
    s.taken.pop_back();
    CHECK(SlotWaits::Poll(&s.cq));
    REQUIRE(dropped.status.has_value());
    CHECK(dropped.status->error_code() == grpc::StatusCode::UNAVAILABLE);
  }
}

TEST_CASE("a call posted as the server goes to sleep is withdrawn and sent through gRPC, "
          "never served twice",
          "[call_slot]") {
  Slot s;
  s.Connect();
  Ended ended;
  s.Start("late", absl::Seconds(10), &ended);
  // The server stops polling before it saw the call (CompletionLoop tells
  // it, then looks once more: here it looks after the worker withdrew).
  s.server.SetPolling(false);
  CHECK(SlotWaits::Poll(&s.cq));
  CHECK(ended.fell_back);
  CHECK_FALSE(ended.status.has_value());
  CHECK_FALSE(s.server.Poll());  // nothing left to take
  CHECK(s.taken.empty());
  CHECK(s.header()->state.load() == call_slot::kIdle);
  // While the server sleeps no call is posted at all.
  CHECK_FALSE(s.client->TryAcquire());
  s.server.SetPolling(true);
  CHECK(s.client->TryAcquire());
  s.client->Release();
}

TEST_CASE("a call the server took just before it slept is served, not withdrawn",
          "[call_slot]") {
  Slot s;
  s.Connect();
  Ended ended;
  s.Start("taken", absl::Seconds(10), &ended);
  s.server.SetPolling(false);
  REQUIRE(s.server.Poll());  // its last look before sleeping
  CHECK_FALSE(SlotWaits::Poll(&s.cq));  // taken: the worker waits for the answer
  CHECK_FALSE(ended.fell_back);
  REQUIRE(s.taken[0]->Answer(0, "", "served").ok());
  CHECK(SlotWaits::Poll(&s.cq));
  CHECK(ended.response == "served");
}

TEST_CASE("a call the server declines unserved goes through gRPC", "[call_slot]") {
  Slot s;
  s.Connect();
  Ended ended;
  s.Start("a pull whose answer has no room in the region", absl::Seconds(10), &ended);
  REQUIRE(s.server.Poll());
  s.taken[0]->Decline();
  CHECK(SlotWaits::Poll(&s.cq));
  CHECK(ended.fell_back);
  CHECK_FALSE(ended.status.has_value());
  CHECK(s.client->TryAcquire());  // free again
  s.client->Release();
}

TEST_CASE("a call a stopped server does not take within the wait goes through gRPC",
          "[call_slot]") {
  Slot s;
  s.Connect();
  Ended ended;
  s.Start("stopped", absl::Seconds(10), &ended);
  CHECK_FALSE(SlotWaits::Poll(&s.cq));  // the server still says it polls
  absl::SleepFor(absl::Milliseconds(60));
  CHECK(SlotWaits::Poll(&s.cq));
  CHECK(ended.fell_back);
  CHECK_FALSE(s.server.Poll());
}

TEST_CASE("a taken call not answered by its deadline fails, and the slot is not used again",
          "[call_slot]") {
  Slot s;
  s.Connect();
  Ended ended;
  s.Start("slow", absl::Milliseconds(30), &ended);
  REQUIRE(s.server.Poll());
  absl::SleepFor(absl::Milliseconds(40));
  CHECK(SlotWaits::Poll(&s.cq));
  REQUIRE(ended.status.has_value());
  CHECK(ended.status->error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  CHECK_FALSE(s.client->TryAcquire());
  // The late answer lands in a slot nobody reads.
  CHECK(s.taken[0]->Answer(0, "", "late").ok());
  CHECK_FALSE(s.client->TryAcquire());
}

TEST_CASE("a server process that exits while it holds the call fails it at once, not at its "
          "deadline",
          "[call_slot]") {
  Slot s;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  // As if the slot were served by that process.
  s.header()->server_pid = child;
  s.Connect();
  Ended ended;
  s.Start("orphan", absl::Seconds(30), &ended);
  REQUIRE(s.server.Poll());
  absl::SleepFor(absl::Milliseconds(20));
  CHECK_FALSE(SlotWaits::Poll(&s.cq));  // alive: it waits
  REQUIRE(kill(child, SIGKILL) == 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const absl::Time start = absl::Now();
  while (!ended.status.has_value() && absl::Now() - start < absl::Seconds(5)) {
    SlotWaits::Poll(&s.cq);
    absl::SleepFor(absl::Milliseconds(1));
  }
  REQUIRE(ended.status.has_value());
  CHECK(ended.status->error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(ended.status->error_message().find("exited") != std::string::npos);
  CHECK(absl::Now() - start < absl::Seconds(1));
  CHECK_FALSE(s.client->TryAcquire());
}

TEST_CASE("a slot whose server's process id names no process here is never used",
          "[call_slot]") {
  Slot s;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  s.header()->server_pid = child;  // exited: as a pid of another namespace would look
  s.Connect();
  CHECK_FALSE(s.client->TryAcquire());
}

TEST_CASE("the server refuses a slot outside its region and forgets a dropped region",
          "[call_slot]") {
  auto created = SharedRegion::Create(1 << 20);
  REQUIRE(created.ok());
  std::shared_ptr<SharedRegion> region = std::move(*created);
  CallSlots server([](std::unique_ptr<SlotCall>) {});
  CHECK(server.Add(region, 0, call_slot::kBytes, 1).code() ==
        absl::StatusCode::kInvalidArgument);  // over the token
  CHECK(server.Add(region, 100, call_slot::kBytes, 1).code() ==
        absl::StatusCode::kInvalidArgument);  // not aligned
  CHECK(server.Add(region, region->size() - 64, call_slot::kBytes, 1).code() ==
        absl::StatusCode::kInvalidArgument);  // past the end
  CHECK(server.Add(region, 64, 4096, 1).code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(server.Add(region, 64, call_slot::kBytes, 1).ok());
  CHECK(server.size() == 1);
  region.reset();  // the worker's new region replaced it
  CHECK_FALSE(server.Poll());
  CHECK(server.size() == 0);
  server.SetPolling(true);  // touches no unmapped slot
}

}  // namespace cairn
