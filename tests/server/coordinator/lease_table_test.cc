// LeaseTable: ids, lease expiry on a fake clock, re-registration, leaving.
#include "server/coordinator/lease_table.h"

#include <catch2/catch.hpp>

#include "tests/fakes/fake_time_source.h"

namespace cairn {
namespace {

constexpr absl::Duration kLease = absl::Seconds(3);

LeaseTable::RegisterArgs Server(int64_t requested_id, const std::string& address) {
  LeaseTable::RegisterArgs args;
  args.role = v1::MEMBER_ROLE_SERVER;
  args.requested_id = requested_id;
  args.address = address;
  return args;
}

LeaseTable::RegisterArgs Worker(int64_t requested_id) {
  LeaseTable::RegisterArgs args;
  args.role = v1::MEMBER_ROLE_WORKER;
  args.requested_id = requested_id;
  return args;
}

TEST_CASE("ids follow registration order, per role, skipping requested ids",
          "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  CHECK(table.Register(Server(-1, "h:1"), time.Now())->id == 0);
  CHECK(table.Register(Server(-1, "h:2"), time.Now())->id == 1);
  CHECK(table.Register(Worker(-1), time.Now())->id == 0);  // its own id space
  CHECK(table.Register(Server(3, "h:4"), time.Now())->id == 3);
  CHECK(table.Register(Server(-1, "h:3"), time.Now())->id == 2);
  CHECK(table.Register(Server(-1, "h:5"), time.Now())->id == 4);  // 3 is taken
  CHECK(table.Register(Worker(-1), time.Now())->id == 1);
  const std::vector<MemberRecord> all = table.Snapshot();
  REQUIRE(all.size() == 7);
  CHECK(all[0].role == v1::MEMBER_ROLE_SERVER);
  CHECK(all[0].address == "h:1");
  CHECK(all[4].id == 4);
  CHECK(all[5].role == v1::MEMBER_ROLE_WORKER);
}

TEST_CASE("an alive id cannot be registered twice", "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  REQUIRE(table.Register(Server(1, "10.0.0.1:7000"), time.Now()).ok());
  auto second = table.Register(Server(1, "10.0.0.2:7000"), time.Now());
  REQUIRE(second.status().code() == absl::StatusCode::kAlreadyExists);
  CHECK_THAT(std::string(second.status().message()),
             Catch::Matchers::Contains("server 1") &&
                 Catch::Matchers::Contains("10.0.0.1:7000"));
  CHECK(table.Find(v1::MEMBER_ROLE_SERVER, 1)->address == "10.0.0.1:7000");
}

TEST_CASE("requested ids outside -1..kMaxMemberId are rejected", "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  CHECK(table.Register(Worker(-2), time.Now()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(table.Register(Worker(int64_t{kMaxMemberId} + 1), time.Now()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(table.Register(Worker(kMaxMemberId), time.Now()).ok());
  LeaseTable::RegisterArgs no_role;
  CHECK(table.Register(no_role, time.Now()).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a lease expires at lease_timeout after the last renewal, not before",
          "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  REQUIRE(table.Register(Server(-1, "h:1"), time.Now()).ok());
  REQUIRE(table.Register(Worker(-1), time.Now()).ok());

  time.Advance(absl::Seconds(2));
  REQUIRE(table.Renew(v1::MEMBER_ROLE_WORKER, 0, /*clock=*/4, time.Now()).ok());
  time.Advance(absl::Milliseconds(999));  // server at 2.999 s of 3 s
  CHECK(table.ExpireLeases(time.Now()).empty());
  CHECK(table.Find(v1::MEMBER_ROLE_SERVER, 0)->state == v1::MEMBER_STATE_ALIVE);

  time.Advance(absl::Milliseconds(1));  // server at exactly 3 s, worker at 1 s
  std::vector<MemberRecord> expired = table.ExpireLeases(time.Now());
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].role == v1::MEMBER_ROLE_SERVER);
  CHECK(expired[0].id == 0);
  CHECK(expired[0].state == v1::MEMBER_STATE_DEAD);
  CHECK(table.ExpireLeases(time.Now()).empty());  // reported once

  time.Advance(absl::Seconds(2));  // worker at 3 s since its renewal
  expired = table.ExpireLeases(time.Now());
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].role == v1::MEMBER_ROLE_WORKER);
  CHECK(expired[0].clock == 4);
}

TEST_CASE("a dead member cannot heartbeat, registering again revives its id",
          "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  REQUIRE(table.Register(Server(-1, "h:1"), time.Now()).ok());
  REQUIRE(table.Register(Server(-1, "h:2"), time.Now()).ok());
  time.Advance(kLease);
  REQUIRE(table.ExpireLeases(time.Now()).size() == 2);

  auto renewed = table.Renew(v1::MEMBER_ROLE_SERVER, 1, -1, time.Now());
  CHECK(renewed.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(renewed.status().message()), Catch::Matchers::Contains("server 1 is dead"));

  auto again = table.Register(Server(1, "h:22"), time.Now());
  REQUIRE(again.ok());
  CHECK(again->id == 1);
  CHECK(again->state == v1::MEMBER_STATE_ALIVE);
  CHECK(again->address == "h:22");
  CHECK(again->incarnation == 2);
  CHECK(table.Renew(v1::MEMBER_ROLE_SERVER, 1, -1, time.Now()).ok());
  // An automatic id never reuses a dead member's id.
  CHECK(table.Register(Server(-1, "h:3"), time.Now())->id == 2);
}

TEST_CASE("heartbeats of unknown members are NotFound", "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  auto renewed = table.Renew(v1::MEMBER_ROLE_WORKER, 7, 0, time.Now());
  CHECK(renewed.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(renewed.status().message()), Catch::Matchers::Contains("worker 7"));
  CHECK(table.Leave(v1::MEMBER_ROLE_WORKER, 7, 0).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("a member that left is never declared dead", "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  REQUIRE(table.Register(Worker(-1), time.Now()).ok());
  auto left = table.Leave(v1::MEMBER_ROLE_WORKER, 0, /*final_clock=*/7);
  REQUIRE(left.ok());
  CHECK(left->state == v1::MEMBER_STATE_LEFT);
  CHECK(left->clock == 7);
  time.Advance(kLease * 2);
  CHECK(table.ExpireLeases(time.Now()).empty());
  CHECK(table.Find(v1::MEMBER_ROLE_WORKER, 0)->state == v1::MEMBER_STATE_LEFT);
  CHECK(table.Renew(v1::MEMBER_ROLE_WORKER, 0, 8, time.Now()).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("a worker's start clock is its clock until it reports one", "[coordinator][lease]") {
  FakeTimeSource time;
  LeaseTable table(kLease);
  LeaseTable::RegisterArgs args = Worker(-1);
  args.start_clock = 12;
  auto record = table.Register(args, time.Now());
  REQUIRE(record.ok());
  CHECK(record->start_clock == 12);
  CHECK(record->clock == 12);
  CHECK(table.Renew(v1::MEMBER_ROLE_WORKER, 0, 13, time.Now())->clock == 13);
  CHECK(table.Renew(v1::MEMBER_ROLE_WORKER, 0, -1, time.Now())->clock == 13);
}

}  // namespace
}  // namespace cairn
