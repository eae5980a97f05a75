#include "tools/ctl/status_format.h"

#include "common/member_names.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace cairn::ctl {
namespace {

// Value bytes a server holds over its tables (primary and backup copies).
uint64_t HeldBytes(const v1::StatsResponse& stats) {
  uint64_t bytes = 0;
  for (const v1::TableStats& t : stats.tables()) bytes += t.bytes();
  return bytes;
}

// Copies of a table's keys over its servers: "2", "1.5" while a group is
// short of a copy, "-" with no key held.
std::string Copies(const TableClocks& t) {
  if (t.num_keys == 0) return "-";
  if (t.held_keys % t.num_keys == 0) return absl::StrCat(t.held_keys / t.num_keys);
  return absl::StrFormat("%.1f", static_cast<double>(t.held_keys) / t.num_keys);
}

using Row = std::vector<std::string>;

std::vector<v1::Member> SortedMembers(const v1::ListMembersResponse& membership) {
  std::vector<v1::Member> members(membership.members().begin(), membership.members().end());
  std::sort(members.begin(), members.end(), [](const v1::Member& a, const v1::Member& b) {
    if (a.role() != b.role()) return a.role() < b.role();
    return a.id() < b.id();
  });
  return members;
}

std::string Clock(int64_t clock) { return clock < 0 ? "-" : absl::StrCat(clock); }

}  // namespace

std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const std::vector<std::string>& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const std::vector<std::string>& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string CompactList(std::vector<uint32_t> values) {
  std::sort(values.begin(), values.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size();) {
    // The longest run from i with one step between neighbours.
    size_t end = i + 1;
    if (i + 1 < values.size()) {
      const uint32_t step = values[i + 1] - values[i];
      while (end < values.size() && values[end] - values[end - 1] == step) ++end;
      if (step == 1 && end - i >= 2) {
        parts.push_back(absl::StrCat(values[i], "-", values[end - 1]));
        i = end;
        continue;
      }
      if (step > 1 && end - i >= 4) {
        parts.push_back(absl::StrCat(values[i], ",", values[i + 1], ",...,", values[end - 1]));
        i = end;
        continue;
      }
    }
    parts.push_back(absl::StrCat(values[i]));
    ++i;
  }
  return absl::StrJoin(parts, ",");
}

namespace {

std::string Backups(const v1::PartitionAssignment& a) {
  return a.backups().empty() ? "-" : absl::StrJoin(a.backups(), ",");
}

std::string LeaseAge(int64_t ms) { return absl::StrCat(ms / 1000, ".", (ms % 1000) / 100, "s"); }

}  // namespace

nlohmann::json StatusToJson(const ClusterStatus& status) {
  nlohmann::json out;
  out["coordinator"] = {{"address", status.coordinator}};
  out["members"] = nlohmann::json::array();
  for (const v1::Member& m : SortedMembers(status.membership)) {
    nlohmann::json member = {{"role", RoleName(m.role())},
                             {"id", m.id()},
                             {"state", StateName(m.state())},
                             {"address", m.address()},
                             {"metrics_address", m.metrics_address()},
                             {"lease_age_ms", m.lease_age_ms()}};
    if (m.role() == v1::MEMBER_ROLE_WORKER) member["start_clock"] = m.start_clock();
    out["members"].push_back(std::move(member));
  }
  const v1::PartitionMap& map = status.membership.map();
  nlohmann::json partitions = nlohmann::json::array();
  for (const v1::PartitionAssignment& a : map.assignments()) {
    partitions.push_back(
        {{"partition", a.partition()},
         {"primary", a.primary()},
         {"backups", std::vector<uint32_t>(a.backups().begin(), a.backups().end())}});
  }
  out["partition_map"] = {{"version", map.version()},
                          {"num_partitions", map.num_partitions()},
                          {"ready", map.ready()},
                          {"partitions", std::move(partitions)}};
  out["tables"] = nlohmann::json::array();
  for (const TableClocks& t : status.tables) {
    out["tables"].push_back({{"table", t.table},
                             {"min_clock", t.min_clock},
                             {"max_clock", t.max_clock},
                             {"num_keys", t.num_keys},
                             {"bytes", t.bytes},
                             {"held_keys", t.held_keys},
                             {"held_bytes", t.held_bytes},
                             {"pending_ids", t.pending_ids},
                             {"not_admitted_pushes", t.not_admitted_pushes},
                             {"evicted_rows", t.evicted_rows},
                             {"expired_rows", t.expired_rows},
                             {"servers", t.servers}});
  }
  out["servers"] = nlohmann::json::array();
  for (const ServerStats& s : status.servers) {
    nlohmann::json server = {{"id", s.server_id}, {"address", s.address}, {"ok", s.status.ok()}};
    if (s.status.ok()) {
      server["map_version"] = s.stats.map_version();
      server["partitions"] =
          std::vector<uint32_t>(s.stats.partitions().begin(), s.stats.partitions().end());
      server["bytes"] = HeldBytes(s.stats);
      server["pushes_applied"] = s.stats.pushes_applied();
      server["pulls_served"] = s.stats.pulls_served();
      if (!s.stats.busy().empty()) server["busy"] = s.stats.busy();
    } else {
      server["error"] = std::string(s.status.message());
    }
    out["servers"].push_back(std::move(server));
  }
  return out;
}

std::string StatusToText(const ClusterStatus& status) {
  const v1::PartitionMap& map = status.membership.map();
  std::string out = absl::StrCat("coordinator ", status.coordinator, "\npartition map version ",
                                 map.version(), ", ", map.num_partitions(), " partitions, ",
                                 map.ready() ? "ready" : "not ready (start-up barrier)", "\n");

  std::vector<Row> members = {{"ROLE", "ID", "STATE", "LEASE AGE", "ADDRESS", "METRICS"}};
  for (const v1::Member& m : SortedMembers(status.membership)) {
    members.push_back({RoleName(m.role()), absl::StrCat(m.id()), StateName(m.state()),
                       LeaseAge(m.lease_age_ms()), m.address().empty() ? "-" : m.address(),
                       m.metrics_address().empty() ? "-" : m.metrics_address()});
  }
  absl::StrAppend(&out, "\nMEMBERS\n", Columns(members));

  // One row per primary and backups (a replica group, in a job's map), in
  // the order of their first partitions: round-robin placement interleaves
  // the groups' partitions.
  std::vector<std::pair<std::pair<uint32_t, std::string>, std::vector<uint32_t>>> holders;
  for (const v1::PartitionAssignment& a : map.assignments()) {
    const std::pair<uint32_t, std::string> key = {a.primary(), Backups(a)};
    auto it = std::find_if(holders.begin(), holders.end(),
                           [&key](const auto& h) { return h.first == key; });
    if (it == holders.end()) it = holders.insert(holders.end(), {key, {}});
    it->second.push_back(a.partition());
  }
  std::vector<Row> partitions = {{"PARTITIONS", "PRIMARY", "BACKUPS"}};
  for (const auto& [key, list] : holders) {
    partitions.push_back({CompactList(list), absl::StrCat(key.first), key.second});
  }
  absl::StrAppend(&out, "\nPARTITION MAP\n", Columns(partitions));

  std::vector<Row> tables = {
      {"TABLE", "MIN CLOCK", "MAX CLOCK", "KEYS", "BYTES", "COPIES", "PENDING IDS", "EVICTED",
       "EXPIRED", "SERVERS"}};
  for (const TableClocks& t : status.tables) {
    tables.push_back({t.table, Clock(t.min_clock), Clock(t.max_clock), absl::StrCat(t.num_keys),
                      absl::StrCat(t.bytes), Copies(t), absl::StrCat(t.pending_ids),
                      absl::StrCat(t.evicted_rows), absl::StrCat(t.expired_rows),
                      absl::StrCat(t.servers)});
  }
  absl::StrAppend(&out, "\nTABLES\n", Columns(tables));

  std::vector<Row> servers = {
      {"SERVER", "ADDRESS", "MAP VERSION", "PARTITIONS", "BYTES", "PUSHES", "PULLS"}};
  std::string errors;
  for (const ServerStats& s : status.servers) {
    if (!s.status.ok()) {
      servers.push_back({absl::StrCat(s.server_id), s.address, "?", "?", "?", "?", "?"});
      absl::StrAppend(&errors, "error: ", s.status.message(), "\n");
      continue;
    }
    if (!s.stats.busy().empty()) {
      const std::string version =
          s.stats.map_version() == 0 ? "?" : absl::StrCat(s.stats.map_version());
      servers.push_back({absl::StrCat(s.server_id), s.address, version, "?", "?", "?", "?"});
      absl::StrAppend(&errors, "server ", s.server_id, " is busy: ", s.stats.busy(),
                      " (requests wait; it keeps its lease)\n");
      continue;
    }
    servers.push_back({absl::StrCat(s.server_id), s.address, absl::StrCat(s.stats.map_version()),
                       absl::StrCat(s.stats.partitions_size()), absl::StrCat(HeldBytes(s.stats)),
                       absl::StrCat(s.stats.pushes_applied()),
                       absl::StrCat(s.stats.pulls_served())});
  }
  absl::StrAppend(&out, "\nSERVERS\n", Columns(servers), errors);
  return out;
}

}  // namespace cairn::ctl
