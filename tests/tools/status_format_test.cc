// cairnctl status output (tools/ctl/status_format.h) and the per-table clock
// summary (tools/ctl/cluster_status.h) on a hand-built status: exact text,
// exact JSON values.
#include "tools/ctl/status_format.h"

#include <catch2/catch.hpp>

namespace cairn::ctl {
namespace {

v1::Member Member(v1::MemberRole role, uint32_t id, v1::MemberState state, int64_t lease_age_ms,
                  const std::string& address, const std::string& metrics) {
  v1::Member m;
  m.set_role(role);
  m.set_id(id);
  m.set_state(state);
  m.set_lease_age_ms(lease_age_ms);
  m.set_address(address);
  m.set_metrics_address(metrics);
  return m;
}

// `keys` held, `primary_keys` of them in partitions the server is primary of.
ServerStats Server(uint32_t id, int64_t min_clock, int64_t max_clock, uint64_t keys,
                   uint64_t primary_keys) {
  ServerStats s;
  s.server_id = id;
  s.address = "10.0.0." + std::to_string(id + 1) + ":7071";
  s.stats.set_server_id(id);
  s.stats.set_map_version(4);
  s.stats.add_partitions(id);
  s.stats.add_partitions(id + 2);
  s.stats.set_pushes_applied(10 * (id + 1));
  s.stats.set_pulls_served(11 * (id + 1));
  v1::TableStats* t = s.stats.add_tables();
  t->set_table("emb");
  t->set_num_keys(keys);
  t->set_min_clock(min_clock);
  t->set_max_clock(max_clock);
  t->set_bytes(keys * 16);
  t->set_primary_keys(primary_keys);
  t->set_primary_bytes(primary_keys * 16);
  t->set_pending_ids(id + 2);
  t->set_not_admitted_pushes(3 * (id + 2));
  t->set_evicted_rows(5 * (id + 1));
  t->set_expired_rows(7 * (id + 1));
  return s;
}

// 2 alive servers (one failing Stats), 1 dead server, 2 workers; 5
// partitions: 0-1 on server 0, 2 on server 1, 3-4 on server 0 with backup 1.
ClusterStatus Example() {
  ClusterStatus status;
  status.coordinator = "10.0.0.9:7070";
  v1::ListMembersResponse& m = status.membership;
  // Listed out of order: the output sorts servers first, then by id.
  *m.add_members() =
      Member(v1::MEMBER_ROLE_WORKER, 1, v1::MEMBER_STATE_LEFT, 2500, "", "10.0.0.5:9201");
  *m.add_members() = Member(v1::MEMBER_ROLE_SERVER, 1, v1::MEMBER_STATE_ALIVE, 120, "10.0.0.2:7071",
                            "10.0.0.2:9101");
  *m.add_members() = Member(v1::MEMBER_ROLE_SERVER, 0, v1::MEMBER_STATE_ALIVE, 80, "10.0.0.1:7071",
                            "10.0.0.1:9101");
  *m.add_members() =
      Member(v1::MEMBER_ROLE_WORKER, 0, v1::MEMBER_STATE_ALIVE, 40, "", "10.0.0.4:9201");
  *m.add_members() =
      Member(v1::MEMBER_ROLE_SERVER, 2, v1::MEMBER_STATE_DEAD, 9100, "10.0.0.3:7071", "");
  v1::PartitionMap& map = *m.mutable_map();
  map.set_version(4);
  map.set_num_partitions(5);
  map.set_ready(true);
  const uint32_t primaries[] = {0, 0, 1, 0, 0};
  for (uint32_t p = 0; p < 5; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(primaries[p]);
    if (p >= 3) a->add_backups(1);
  }
  status.servers.push_back(Server(0, 7, 9, 100, 100));
  ServerStats failed = Server(1, 0, 0, 0, 0);
  failed.status = absl::DeadlineExceededError("Stats of server 1 at 10.0.0.2:7071: deadline");
  status.servers.push_back(failed);
  status.tables = SummarizeTables(status.servers);
  return status;
}

TEST_CASE("table clocks are the lowest min and highest max over answering servers",
          "[tools][ctl]") {
  // Server 0 backs up 40 of server 1's keys; server 1 backs up 0's 30.
  std::vector<ServerStats> servers = {Server(0, 7, 9, 100, 60), Server(1, 5, 8, 70, 40),
                                      Server(2, -1, 0, 4, 4)};  // -1: no live worker there
  ServerStats failed = Server(3, 1, 99, 1000, 1000);
  failed.status = absl::UnavailableError("down");  // not counted at all
  servers.push_back(failed);
  const std::vector<TableClocks> tables = SummarizeTables(servers);
  REQUIRE(tables.size() == 1);
  CHECK(tables[0].table == "emb");
  CHECK(tables[0].min_clock == 5);
  CHECK(tables[0].max_clock == 9);
  CHECK(tables[0].num_keys == 104);  // each key once: the primaries' partitions
  CHECK(tables[0].bytes == 104 * 16);
  CHECK(tables[0].held_keys == 174);  // every copy
  CHECK(tables[0].held_bytes == 174 * 16);
  CHECK(tables[0].pending_ids == 2 + 3 + 4);
  CHECK(tables[0].not_admitted_pushes == 3 * (2 + 3 + 4));
  CHECK(tables[0].evicted_rows == 5 * (1 + 2 + 3));
  CHECK(tables[0].expired_rows == 7 * (1 + 2 + 3));
  CHECK(tables[0].servers == 3);
  // The copies column: 174 keys held of 104.
  ClusterStatus status;
  status.servers = servers;
  status.tables = tables;
  CHECK_THAT(StatusToText(status),
             Catch::Contains("emb    5          9          104   1664   1.7 "));
}

TEST_CASE("tables keep the job's order, not the order of their names", "[tools][ctl]") {
  std::vector<ServerStats> servers = {Server(0, 1, 1, 4, 2), Server(1, 1, 1, 4, 2)};
  for (ServerStats& s : servers) {
    s.stats.mutable_tables(0)->set_table("ctr.c2");
    v1::TableStats* t = s.stats.add_tables();
    t->set_table("ctr.c10");
    t->set_num_keys(6);
    t->set_primary_keys(3);
  }
  const std::vector<TableClocks> tables = SummarizeTables(servers);
  REQUIRE(tables.size() == 2);
  CHECK(tables[0].table == "ctr.c2");
  CHECK(tables[0].num_keys == 4);
  CHECK(tables[1].table == "ctr.c10");
  CHECK(tables[1].num_keys == 6);
  CHECK(tables[1].held_keys == 12);
  CHECK(tables[1].servers == 2);
}

TEST_CASE("status text shows members, partition runs, table clocks and server errors",
          "[tools][ctl]") {
  CHECK(StatusToText(Example()) ==
        "coordinator 10.0.0.9:7070\n"
        "partition map version 4, 5 partitions, ready\n"
        "\n"
        "MEMBERS\n"
        "ROLE    ID  STATE  LEASE AGE  ADDRESS        METRICS\n"
        "server  0   alive  0.0s       10.0.0.1:7071  10.0.0.1:9101\n"
        "server  1   alive  0.1s       10.0.0.2:7071  10.0.0.2:9101\n"
        "server  2   dead   9.1s       10.0.0.3:7071  -\n"
        "worker  0   alive  0.0s       -              10.0.0.4:9201\n"
        "worker  1   left   2.5s       -              10.0.0.5:9201\n"
        "\n"
        "PARTITION MAP\n"
        "PARTITIONS  PRIMARY  BACKUPS\n"
        "0-1         0        -\n"
        "2           1        -\n"
        "3-4         0        1\n"
        "\n"
        "TABLES\n"
        "TABLE  MIN CLOCK  MAX CLOCK  KEYS  BYTES  COPIES  PENDING IDS  EVICTED  EXPIRED  "
        "SERVERS\n"
        "emb    7          9          100   1600   1       2            5        7        1\n"
        "\n"
        "SERVERS\n"
        "SERVER  ADDRESS        MAP VERSION  PARTITIONS  BYTES  PUSHES  PULLS\n"
        "0       10.0.0.1:7071  4            2           1600   10      11\n"
        "1       10.0.0.2:7071  ?            ?           ?      ?       ?\n"
        "error: Stats of server 1 at 10.0.0.2:7071: deadline\n");
}

TEST_CASE("the partition map's lines list each primary's partitions compactly", "[tools][ctl]") {
  CHECK(CompactList({}) == "");
  CHECK(CompactList({3}) == "3");
  CHECK(CompactList({5, 0, 1, 2}) == "0-2,5");
  CHECK(CompactList({0, 2, 4, 6, 8}) == "0,2,...,8");
  CHECK(CompactList({1, 4, 9}) == "1,4,9");
  CHECK(CompactList({0, 3, 6, 9, 10, 11}) == "0,3,...,9,10-11");
  // Round-robin placement over two servers: one line per primary.
  ClusterStatus status;
  v1::PartitionMap* map = status.membership.mutable_map();
  map->set_num_partitions(64);
  for (uint32_t p = 0; p < 64; ++p) {
    v1::PartitionAssignment* a = map->add_assignments();
    a->set_partition(p);
    a->set_group(p % 2);
    a->set_primary(p % 2);
    a->add_backups(1 - p % 2);
  }
  CHECK_THAT(StatusToText(status), Catch::Contains("PARTITIONS  PRIMARY  BACKUPS\n"
                                                   "0,2,...,62  0        1\n"
                                                   "1,3,...,63  1        0\n"));
}

TEST_CASE("status JSON lists each member and partition once, in order", "[tools][ctl]") {
  const nlohmann::json j = StatusToJson(Example());
  CHECK(j["coordinator"]["address"] == "10.0.0.9:7070");
  REQUIRE(j["members"].size() == 5);
  CHECK(j["members"][0] == nlohmann::json({{"role", "server"},
                                           {"id", 0},
                                           {"state", "alive"},
                                           {"address", "10.0.0.1:7071"},
                                           {"metrics_address", "10.0.0.1:9101"},
                                           {"lease_age_ms", 80}}));
  CHECK(j["members"][2]["state"] == "dead");
  CHECK(j["members"][4]["role"] == "worker");
  CHECK(j["members"][4]["id"] == 1);
  CHECK(j["members"][4]["start_clock"] == 0);
  CHECK(j["partition_map"]["version"] == 4);
  CHECK(j["partition_map"]["ready"] == true);
  REQUIRE(j["partition_map"]["partitions"].size() == 5);
  CHECK(j["partition_map"]["partitions"][3] ==
        nlohmann::json({{"partition", 3}, {"primary", 0}, {"backups", {1}}}));
  CHECK(j["tables"][0] == nlohmann::json({{"table", "emb"},
                                          {"min_clock", 7},
                                          {"max_clock", 9},
                                          {"num_keys", 100},
                                          {"bytes", 1600},
                                          {"held_keys", 100},
                                          {"held_bytes", 1600},
                                          {"pending_ids", 2},
                                          {"not_admitted_pushes", 6},
                                          {"evicted_rows", 5},
                                          {"expired_rows", 7},
                                          {"servers", 1}}));
  CHECK(j["servers"][0]["partitions"] == nlohmann::json({0, 2}));
  CHECK(j["servers"][0]["bytes"] == 1600);
  CHECK(j["servers"][1]["ok"] == false);
  CHECK(j["servers"][1]["error"] == "Stats of server 1 at 10.0.0.2:7071: deadline");
}

TEST_CASE("a server busy with a snapshot or load shows as busy, not as failed", "[tools][ctl]") {
  ClusterStatus status = Example();
  ServerStats busy;
  busy.server_id = 0;
  busy.address = "10.0.0.1:7071";
  busy.stats.set_server_id(0);
  busy.stats.set_map_version(4);
  busy.stats.set_busy("snapshot");
  status.servers[0] = busy;
  const std::string text = StatusToText(status);
  INFO(text);
  CHECK(text.find("server 0 is busy: snapshot (requests wait; it keeps its lease)") !=
        std::string::npos);
  const nlohmann::json j = StatusToJson(status);
  CHECK(j["servers"][0]["ok"] == true);
  CHECK(j["servers"][0]["busy"] == "snapshot");
  CHECK_FALSE(j["servers"][1].contains("busy"));
}

}  // namespace
}  // namespace cairn::ctl
