#include "server/coordinator/failover.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cairn {
namespace {

void RemoveBackup(uint32_t server, v1::PartitionAssignment* a) {
  auto* backups = a->mutable_backups();
  backups->erase(std::remove(backups->begin(), backups->end(), server), backups->end());
  auto* joining = a->mutable_joining();
  joining->erase(std::remove(joining->begin(), joining->end(), server), joining->end());
}

}  // namespace

std::vector<GroupFailover> FailOver(uint32_t dead, const std::set<uint32_t>& alive_servers,
                                    std::vector<v1::PartitionAssignment>* assignments) {
  // The promotion of each group dead was primary of, decided once from the
  // group's first partition, so every partition of the group moves alike.
  std::map<uint32_t, GroupFailover> groups;
  for (v1::PartitionAssignment& a : *assignments) {
    if (a.primary() == dead) {
      auto [it, added] = groups.try_emplace(a.group());
      GroupFailover& g = it->second;
      if (added) {
        g.group = a.group();
        g.dead = dead;
        for (uint32_t backup : a.backups()) {
          if (backup != dead && alive_servers.contains(backup)) {
            g.promoted = true;
            g.new_primary = backup;
            break;
          }
        }
      }
      g.partitions.push_back(a.partition());
      if (g.promoted) {
        a.set_primary(g.new_primary);
        RemoveBackup(g.new_primary, &a);
      }
    }
    RemoveBackup(dead, &a);
  }
  std::vector<GroupFailover> out;
  for (auto& [group, g] : groups) {
    std::sort(g.partitions.begin(), g.partitions.end());
    out.push_back(std::move(g));
  }
  return out;
}

int CountUnderReplicated(const std::vector<v1::PartitionAssignment>& assignments,
                         const std::set<uint32_t>& alive_servers, uint32_t replication) {
  int count = 0;
  for (const v1::PartitionAssignment& a : assignments) {
    uint32_t alive = alive_servers.contains(a.primary()) ? 1 : 0;
    for (uint32_t backup : a.backups()) alive += alive_servers.contains(backup) ? 1 : 0;
    if (alive < replication) ++count;
  }
  return count;
}

std::string DescribeFailover(const GroupFailover& f) {
  const std::string head = absl::StrCat("group ", f.group, " (partitions ",
                                        absl::StrJoin(f.partitions, ","), "): server ", f.dead,
                                        " DEAD, ");
  if (f.promoted) return absl::StrCat(head, "server ", f.new_primary, " promoted to primary");
  return absl::StrCat(head, "no live backup: its partitions stay on the dead server");
}

namespace {

// Live replicas (primary, backups, joiners) per group, and whether the
// group's primary lives.
struct GroupReplicas {
  std::map<uint32_t, std::set<uint32_t>> replicas;
  std::map<uint32_t, bool> primary_alive;
};

GroupReplicas LiveReplicas(const std::set<uint32_t>& alive_servers,
                           const std::vector<v1::PartitionAssignment>& assignments) {
  GroupReplicas out;
  for (const v1::PartitionAssignment& a : assignments) {
    std::set<uint32_t>& r = out.replicas[a.group()];
    out.primary_alive[a.group()] = alive_servers.contains(a.primary());
    if (alive_servers.contains(a.primary())) r.insert(a.primary());
    for (uint32_t b : a.backups()) {
      if (alive_servers.contains(b)) r.insert(b);
    }
    for (uint32_t j : a.joining()) {
      if (alive_servers.contains(j)) r.insert(j);
    }
  }
  return out;
}

}  // namespace

std::set<uint32_t> ShortGroups(const std::set<uint32_t>& alive_servers, uint32_t replication,
                               const std::vector<v1::PartitionAssignment>& assignments) {
  const GroupReplicas live = LiveReplicas(alive_servers, assignments);
  std::set<uint32_t> groups;
  for (const auto& [group, r] : live.replicas) {
    if (live.primary_alive.at(group) && r.size() < replication) groups.insert(group);
  }
  return groups;
}

std::vector<std::pair<uint32_t, uint32_t>> AssignJoiners(
    const std::set<uint32_t>& alive_servers, uint32_t replication,
    const std::set<uint32_t>& overdue, std::vector<v1::PartitionAssignment>* assignments) {
  GroupReplicas live = LiveReplicas(alive_servers, *assignments);
  // How many groups each live server replicates; a server empty at the
  // start of this round may take copies of any short group.
  std::map<uint32_t, int> load;
  for (uint32_t s : alive_servers) load[s] = 0;
  for (const auto& [group, r] : live.replicas) {
    for (uint32_t s : r) ++load[s];
  }
  std::set<uint32_t> empty;
  for (const auto& [s, l] : load) {
    if (l == 0) empty.insert(s);
  }
  std::vector<std::pair<uint32_t, uint32_t>> added;
  for (auto& [group, r] : live.replicas) {
    // A group without a live primary has nobody to send its state.
    if (!live.primary_alive[group]) continue;
    const bool any_server = overdue.contains(group);
    while (r.size() < replication) {
      uint32_t best = 0;
      int best_load = -1;
      for (const auto& [s, l] : load) {
        if (r.contains(s) || (!any_server && !empty.contains(s))) continue;
        if (best_load < 0 || l < best_load) {
          best = s;
          best_load = l;
        }
      }
      if (best_load < 0) break;  // no server left to take a copy
      r.insert(best);
      ++load[best];
      for (v1::PartitionAssignment& a : *assignments) {
        if (a.group() == group) a.add_joining(best);
      }
      added.emplace_back(group, best);
    }
  }
  return added;
}

std::vector<PrimaryMove> BalancePrimaries(const std::set<uint32_t>& alive_servers,
                                          std::vector<v1::PartitionAssignment>* assignments) {
  // Each group's primary and backups, from its first partition (a group's
  // partitions share them).
  struct Roles {
    uint32_t primary = 0;
    std::vector<uint32_t> backups;
  };
  std::map<uint32_t, Roles> groups;
  for (const v1::PartitionAssignment& a : *assignments) {
    if (groups.contains(a.group())) continue;
    groups[a.group()] = {a.primary(), {a.backups().begin(), a.backups().end()}};
  }
  std::map<uint32_t, int> load;  // groups each live server is primary of
  for (uint32_t s : alive_servers) load[s] = 0;
  for (const auto& [group, roles] : groups) {
    auto it = load.find(roles.primary);
    if (it != load.end()) ++it->second;
  }
  std::vector<PrimaryMove> moves;
  std::set<uint32_t> moved;
  while (true) {
    // The best move: from the most loaded primary to its least loaded
    // backup, if that one holds at least two groups fewer.
    std::optional<std::pair<uint32_t, uint32_t>> best;  // (group, backup)
    int best_from = 0;
    int best_to = 0;
    for (const auto& [group, roles] : groups) {
      if (moved.contains(group) || !load.contains(roles.primary)) continue;
      const int from = load[roles.primary];
      for (uint32_t b : roles.backups) {
        auto to = load.find(b);
        if (to == load.end() || to->second > from - 2) continue;
        if (!best || from > best_from || (from == best_from && to->second < best_to)) {
          best = {group, b};
          best_from = from;
          best_to = to->second;
        }
      }
    }
    if (!best) break;
    const auto [group, to] = *best;
    Roles& roles = groups[group];
    PrimaryMove move{group, roles.primary, to, best_from, best_to, {}};
    std::replace(roles.backups.begin(), roles.backups.end(), to, roles.primary);
    roles.primary = to;
    --load[move.from];
    ++load[move.to];
    moved.insert(group);
    for (v1::PartitionAssignment& a : *assignments) {
      if (a.group() != group) continue;
      a.set_primary(to);
      auto* backups = a.mutable_backups();
      std::replace(backups->begin(), backups->end(), to, move.from);
      move.partitions.push_back(a.partition());
    }
    std::sort(move.partitions.begin(), move.partitions.end());
    moves.push_back(std::move(move));
  }
  return moves;
}

std::string DescribePrimaryMove(const PrimaryMove& m) {
  auto groups = [](int n) {
    return n == 0 ? std::string("none") : absl::StrCat(n, n == 1 ? " group" : " groups");
  };
  return absl::StrCat("group ", m.group, " (partitions ", absl::StrJoin(m.partitions, ","),
                      "): server ", m.to, " promoted to primary in place of server ", m.from,
                      ", which backs it up now (primaries balanced: server ", m.from, " held ",
                      groups(m.from_groups), ", server ", m.to, " ", groups(m.to_groups), ")");
}

bool PromoteJoiner(uint32_t server, uint32_t group,
                   std::vector<v1::PartitionAssignment>* assignments) {
  bool moved = false;
  for (v1::PartitionAssignment& a : *assignments) {
    if (a.group() != group) continue;
    auto* joining = a.mutable_joining();
    auto it = std::find(joining->begin(), joining->end(), server);
    if (it == joining->end()) continue;
    joining->erase(it);
    a.add_backups(server);
    moved = true;
  }
  return moved;
}

}  // namespace cairn
