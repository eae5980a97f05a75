#include "server/checkpoint/restore_plan.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace cairn::checkpoint {

absl::StatusOr<std::vector<RestoreSource>> PlanRestore(
    const std::vector<const CheckpointReader*>& readers) {
  std::vector<std::vector<Manifest>> all;
  for (const CheckpointReader* r : readers) {
    ASSIGN_OR_RETURN(std::vector<Manifest> list, r->List());
    all.push_back(std::move(list));
  }
  std::set<int64_t, std::greater<>> clocks;
  for (const auto& list : all) {
    for (const Manifest& m : list) clocks.insert(m.clock);
  }
  if (clocks.empty()) return absl::NotFoundError("the stores hold no complete checkpoint");
  std::string newest_missing;
  for (int64_t clock : clocks) {
    std::vector<RestoreSource> sources;
    std::set<std::pair<uint32_t, uint32_t>> covered;
    const Manifest* first = nullptr;
    for (size_t s = 0; s < all.size(); ++s) {
      const Manifest* pick = nullptr;
      for (const Manifest& m : all[s]) {
        if (m.clock == clock) pick = &m;  // the newest with this clock
      }
      if (pick == nullptr) continue;
      if (first == nullptr) first = pick;
      RETURN_IF_ERROR(CheckTablesMatch(*pick, first->tables));
      if (pick->num_partitions != first->num_partitions) {
        return absl::FailedPreconditionError(absl::StrCat(
            "stores disagree on the number of partitions at clock ", clock, ": ",
            first->num_partitions, " and ", pick->num_partitions, " (", readers[s]->dir(), ")"));
      }
      for (const PartitionEntry& e : pick->partitions) covered.emplace(e.table_id, e.partition);
      sources.push_back({readers[s], *pick});
    }
    std::vector<std::string> missing;
    for (const TableShape& t : first->tables) {
      for (uint32_t p = 0; p < first->num_partitions; ++p) {
        if (!covered.contains({t.id, p})) missing.push_back(absl::StrCat(t.name, "/", p));
      }
    }
    if (missing.empty()) return sources;
    if (newest_missing.empty()) {
      // The first few by name; one server's store of a large job may lack
      // hundreds.
      constexpr size_t kNamed = 6;
      const size_t total = first->tables.size() * first->num_partitions;
      newest_missing = absl::StrCat(
          "the newest checkpoint (clock ", clock, ") lacks table/partition ",
          absl::StrJoin(missing.begin(), missing.begin() + std::min(missing.size(), kNamed), ", "),
          missing.size() > kNamed
              ? absl::StrCat(" and ", missing.size() - kNamed, " more (", missing.size(), " of ",
                             total, ")")
              : "");
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no clock has every partition in the given stores; ", newest_missing));
}

}  // namespace cairn::checkpoint
