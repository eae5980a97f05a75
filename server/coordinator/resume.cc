#include "server/coordinator/resume.h"

#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/job_shapes.h"

namespace cairn {

absl::StatusOr<v1::CheckpointRecord> ChooseResumePoint(
    const std::vector<v1::CheckpointRecord>& records, const std::string& which,
    const std::string& where) {
  if (records.empty()) {
    return absl::NotFoundError(absl::StrCat("no complete checkpoint recorded in ", where));
  }
  if (which == "latest") return records.back();
  int64_t clock = -1;
  if (!absl::SimpleAtoi(which, &clock)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint.resume: expected latest or a clock, got \"", which, "\""));
  }
  std::vector<std::string> clocks;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->clock() == clock) return *it;
    clocks.push_back(absl::StrCat(it->clock()));
  }
  return absl::NotFoundError(absl::StrCat("no complete checkpoint at clock ", clock, " in ",
                                          where, "; complete ones are at clocks ",
                                          absl::StrJoin(clocks, ", ")));
}

absl::Status CheckResumePoint(const v1::CheckpointRecord& record, v1::JobSpec* job,
                              const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<checkpoint::TableShape> shapes, checkpoint::JobTableShapes(*job));
  bool placed = false;
  // (server, checkpoint id) -> the record's pieces in that store.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<const v1::CheckpointPartition*>> stores;
  for (const v1::CheckpointPartition& p : record.partitions()) {
    stores[{p.server_id(), p.checkpoint_id()}].push_back(&p);
  }
  for (const auto& [key, pieces] : stores) {
    const std::string store = checkpoint::ServerStoreDir(dir, key.first);
    std::error_code error;
    if (!std::filesystem::is_directory(store, error)) {
      return absl::NotFoundError(absl::StrCat(
          "checkpoint record ", record.id(), " names server ", key.first, "'s store ", store,
          ", which this coordinator cannot see: checkpoint.dir must be one filesystem that "
          "the coordinator and every server mount (NFS or Lustre under Slurm, a "
          "ReadWriteMany volume on Kubernetes; docs/deploy.md, \"Checkpoints on a cluster\")"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::CheckpointReader> reader,
                     checkpoint::CheckpointReader::Open(store));
    ASSIGN_OR_RETURN(std::vector<checkpoint::Manifest> manifests, reader->List());
    const checkpoint::Manifest* m = nullptr;
    for (const checkpoint::Manifest& candidate : manifests) {
      if (candidate.id == key.second) m = &candidate;
    }
    if (m == nullptr || m->clock != record.clock()) {
      return absl::NotFoundError(absl::StrCat(
          store, " lacks checkpoint ", key.second, " at clock ", record.clock(),
          ", which checkpoint record ", record.id(), " names"));
    }
    if (!placed) {
      for (const checkpoint::TableShape& t : m->tables) {
        if (t.id < static_cast<uint32_t>(job->tables_size()) &&
            job->tables(t.id).name() == t.name && t.kind == v1::TABLE_KIND_DENSE) {
          job->mutable_tables(t.id)->set_partition_offset(t.partition_offset);
        }
      }
      ASSIGN_OR_RETURN(shapes, checkpoint::JobTableShapes(*job));
      placed = true;
    }
    RETURN_IF_ERROR(Annotate(checkpoint::CheckTablesMatch(*m, shapes),
                             absl::StrCat("resume from ", store, " checkpoint ", m->id)));
    if (m->num_partitions != job->num_partitions()) {
      return absl::FailedPreconditionError(absl::StrCat(
          store, " checkpoint ", m->id, " has ", m->num_partitions,
          " partitions per table; the job has ", job->num_partitions(),
          " (cluster.partitions is fixed for a job's life)"));
    }
    for (const v1::CheckpointPartition* p : pieces) {
      const checkpoint::PartitionEntry* entry = nullptr;
      for (const checkpoint::PartitionEntry& e : m->partitions) {
        if (e.table_id == p->table_id() && e.partition == p->partition()) entry = &e;
      }
      if (entry == nullptr || entry->checksum != p->checksum()) {
        return absl::DataLossError(absl::StrCat(
            store, " checkpoint ", m->id, ": table ", shapes[p->table_id()].name, " partition ",
            p->partition(), entry == nullptr ? " is missing" : " has another checksum",
            " than checkpoint record ", record.id(), " says"));
      }
      // Reading verifies the bytes against the checksum: damage is found
      // here, before any server opens a store for writing.
      RETURN_IF_ERROR(reader->ReadPartition(*m, p->table_id(), p->partition()).status());
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
