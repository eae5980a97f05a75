#include "server/checkpoint/checkpoint_reader.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "server/checkpoint/checkpoint_format.h"
#include "common/rocksdb_status.h"

namespace cairn::checkpoint {
namespace {

std::string TableName(const Manifest& m, uint32_t table_id) {
  for (const TableShape& t : m.tables) {
    if (t.id == table_id) return t.name;
  }
  return absl::StrCat("#", table_id);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("checkpoint directory ", dir, " does not exist"));
  }
  if (!std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec)) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint directory ", dir, " holds no checkpoint store"));
  }
  rocksdb::Options options;
  options.create_if_missing = false;
  options.paranoid_checks = true;
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::DB::OpenForReadOnly(options, dir, &raw),
                                  absl::StrCat("open checkpoint store ", dir)));
  return std::unique_ptr<CheckpointReader>(
      new CheckpointReader(dir, std::unique_ptr<rocksdb::DB>(raw)));
}

CheckpointReader::CheckpointReader(std::string dir, std::unique_ptr<rocksdb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

CheckpointReader::~CheckpointReader() = default;

absl::StatusOr<std::vector<Manifest>> CheckpointReader::List() const {
  std::vector<Manifest> out;
  rocksdb::ReadOptions read_options;
  read_options.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options));
  const std::string prefix(1, kManifestTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const std::string what = absl::StrCat(dir_, ": manifest ", it->key().ToString(true));
    ASSIGN_OR_RETURN(Manifest m, DecodeManifest(it->value().ToString(), what));
    out.push_back(std::move(m));
  }
  RETURN_IF_ERROR(FromRocksStatus(it->status(), absl::StrCat("list checkpoints in ", dir_)));
  return out;
}

absl::StatusOr<Manifest> CheckpointReader::Latest() const {
  ASSIGN_OR_RETURN(std::vector<Manifest> all, List());
  if (all.empty()) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint directory ", dir_, " holds no complete checkpoint"));
  }
  return std::move(all.back());
}

absl::StatusOr<std::string> CheckpointReader::GetVerified(const std::string& key,
                                                          uint64_t checksum,
                                                          const std::string& what) const {
  rocksdb::ReadOptions read_options;
  read_options.verify_checksums = true;
  std::string value;
  const rocksdb::Status s = db_->Get(read_options, key, &value);
  if (s.IsNotFound()) {
    return absl::DataLossError(absl::StrCat(what, ": missing although the manifest lists it"));
  }
  RETURN_IF_ERROR(FromRocksStatus(s, what));
  if (Checksum(value) != checksum) {
    return absl::DataLossError(absl::StrCat(what, ": checksum mismatch (manifest ", checksum,
                                            ", data ", Checksum(value), ")"));
  }
  return value;
}

absl::StatusOr<PartitionRows> CheckpointReader::ReadPartition(const Manifest& m,
                                                              uint32_t table_id,
                                                              uint32_t partition) const {
  const std::string what = absl::StrCat(dir_, ": checkpoint ", m.id, " table ",
                                        TableName(m, table_id), " partition ", partition);
  for (const PartitionEntry& p : m.partitions) {
    if (p.table_id != table_id || p.partition != partition) continue;
    ASSIGN_OR_RETURN(std::string value,
                     GetVerified(PartitionKey(m.id, table_id, partition), p.checksum, what));
    return DecodeRows(value, what);
  }
  return absl::NotFoundError(absl::StrCat(what, ": not in this checkpoint"));
}

absl::StatusOr<WorkerState> CheckpointReader::ReadWorkers(const Manifest& m) const {
  const std::string what = absl::StrCat(dir_, ": checkpoint ", m.id, " worker state");
  ASSIGN_OR_RETURN(std::string value, GetVerified(WorkersKey(m.id), m.workers_checksum, what));
  return DecodeWorkers(value, what);
}

absl::Status CheckTablesMatch(const Manifest& m, const std::vector<TableShape>& job) {
  for (const TableShape& want : job) {
    const TableShape* have = nullptr;
    for (const TableShape& t : m.tables) {
      if (t.name == want.name) have = &t;
    }
    if (have == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", want.name, ": the job has ", DescribeShape(want), ", checkpoint ", m.id,
          " has no such table"));
    }
    if (!(*have == want)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", want.name, ": checkpoint ", m.id, " has ", DescribeShape(*have),
          " (id ", have->id, "), the job has ", DescribeShape(want), " (id ", want.id, ")"));
    }
  }
  for (const TableShape& t : m.tables) {
    bool found = false;
    for (const TableShape& want : job) found |= want.name == t.name;
    if (!found) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", t.name, ": checkpoint ", m.id, " has ", DescribeShape(t),
          ", the job has no such table"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::checkpoint
