#include "server/checkpoint/checkpoint_writer.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/killpoint.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "server/checkpoint/checkpoint_format.h"
#include "common/rocksdb_status.h"

namespace cairn::checkpoint {
namespace {

// Partition bytes per unsynced write of a checkpoint (RocksDB's default
// memtable size): what a checkpoint holds beside the shard's own copy.
constexpr size_t kBatchBytes = 64 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Open(const std::string& dir,
                                                                        uint32_t server_id,
                                                                        int keep) {
  if (keep < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint store ", dir, ": keep must be >= 0, got ", keep));
  }
  rocksdb::Options options;
  options.create_if_missing = true;
  options.paranoid_checks = true;
  // No compaction until this writer's first checkpoint: a job resuming from
  // this store reads it (read-only, maybe from other processes) right after
  // the writer opens it, and a compaction deleting table files under those
  // readers would fail them. By the first checkpoint every restore is done.
  options.disable_auto_compactions = true;
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(
      FromRocksStatus(rocksdb::DB::Open(options, dir, &raw), absl::StrCat("open checkpoint store ", dir)));
  std::unique_ptr<CheckpointWriter> writer(
      new CheckpointWriter(dir, server_id, keep, std::unique_ptr<rocksdb::DB>(raw)));
  {
    // A crash between a checkpoint's batch and its retention pass leaves one
    // checkpoint too many; trim it now.
    absl::MutexLock lock(&writer->mu_);
    RETURN_IF_ERROR(writer->Retain());
  }
  return writer;
}

CheckpointWriter::CheckpointWriter(std::string dir, uint32_t server_id, int keep,
                                   std::unique_ptr<rocksdb::DB> db)
    : dir_(std::move(dir)), server_id_(server_id), keep_(keep), db_(std::move(db)) {}

CheckpointWriter::~CheckpointWriter() {
  absl::MutexLock lock(&mu_);
  // Close reports only errors of a clean shutdown; every checkpoint was
  // already synced by its own write, so there is nothing left to lose.
  (void)db_->Close();
}

absl::StatusOr<std::vector<uint64_t>> CheckpointWriter::ManifestIds() const {
  std::vector<uint64_t> ids;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kManifestTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != 9) continue;
    ids.push_back(GetBigEndian64(it->key().data() + 1));
  }
  RETURN_IF_ERROR(FromRocksStatus(it->status(), absl::StrCat("list checkpoints in ", dir_)));
  return ids;
}

absl::StatusOr<Manifest> CheckpointWriter::Write(int64_t clock, uint32_t num_partitions,
                                                 const std::vector<TableShape>& tables,
                                                 std::vector<PartitionData> partitions,
                                                 const WorkerState& workers) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<uint64_t> ids, ManifestIds());
  Manifest m;
  m.id = ids.empty() ? 1 : ids.back() + 1;
  m.clock = clock;
  m.server_id = server_id_;
  m.num_partitions = num_partitions;
  m.unix_millis = absl::ToUnixMillis(absl::Now());
  m.tables = tables;

  std::set<uint32_t> table_ids;
  for (const TableShape& t : tables) table_ids.insert(t.id);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (const PartitionData& p : partitions) {
    if (!table_ids.contains(p.table_id) || p.partition >= num_partitions ||
        !seen.emplace(p.table_id, p.partition).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint at clock ", clock, ": partition ", p.partition, " of table id ",
          p.table_id, " is unknown, out of range (", num_partitions, " partitions) or repeated"));
    }
  }
  // The partitions go in batches of about kBatchBytes, unsynced; the last
  // batch, synced, carries the worker state and the manifest, which makes
  // the checkpoint visible (a crash before it leaves partition rows that no
  // manifest names, which the next checkpoint, under the same id,
  // overwrites or retention deletes). One batch of the whole shard would
  // hold a second copy of it, and the memtable a third, at once.
  // Each batch is sized once: growing one by doubling copies it and, past
  // the allocator's mmap threshold, faults in fresh pages every time
  // (tools/bench/checkpoint_bench.cc).
  size_t bytes = 64 << 10;
  for (const PartitionData& p : partitions) {
    bytes += 64 + p.rows.keys.size() * (sizeof(Key) + sizeof(uint32_t) + sizeof(int64_t)) +
             (p.rows.values.size() + p.rows.slots.size()) * sizeof(float);
  }
  rocksdb::WriteBatch batch(std::min(bytes, kBatchBytes + (kBatchBytes >> 3)));
  rocksdb::WriteOptions unsynced;
  for (PartitionData& p : partitions) {
    const std::string value = EncodeRows(p.rows);
    m.partitions.push_back({p.table_id, p.partition, p.rows.keys.size(), value.size(),
                            Checksum(value)});
    RETURN_IF_ERROR(FromRocksStatus(batch.Put(PartitionKey(m.id, p.table_id, p.partition), value),
                                    "checkpoint batch"));
    p.rows = PartitionRows();  // in the batch now: free the copy
    if (batch.GetDataSize() >= kBatchBytes) {
      RETURN_IF_ERROR(FromRocksStatus(db_->Write(unsynced, &batch),
                                      absl::StrCat("write checkpoint ", m.id, " to ", dir_)));
      batch.Clear();
    }
  }
  const std::string worker_value = EncodeWorkers(workers);
  m.workers_checksum = Checksum(worker_value);
  RETURN_IF_ERROR(FromRocksStatus(batch.Put(WorkersKey(m.id), worker_value), "checkpoint batch"));
  RETURN_IF_ERROR(
      FromRocksStatus(batch.Put(ManifestKey(m.id), EncodeManifest(m)), "checkpoint batch"));

  rocksdb::WriteOptions write_options;
  write_options.sync = true;  // and every batch before it, in the same WAL
  CAIRN_KILLPOINT("checkpoint.before_batch");
  RETURN_IF_ERROR(FromRocksStatus(db_->Write(write_options, &batch),
                                  absl::StrCat("write checkpoint ", m.id, " to ", dir_)));
  CAIRN_KILLPOINT("checkpoint.before_flush");
  // Move the checkpoint from the WAL into block-checksummed table files, so a
  // damaged byte is reported as corruption instead of being dropped by WAL
  // recovery, and the WAL stays small.
  RETURN_IF_ERROR(FromRocksStatus(db_->Flush(rocksdb::FlushOptions()),
                                  absl::StrCat("flush checkpoint ", m.id, " in ", dir_)));
  if (!compacting_) {
    RETURN_IF_ERROR(FromRocksStatus(db_->SetOptions({{"disable_auto_compactions", "false"}}),
                                    absl::StrCat("enable compactions in ", dir_)));
    compacting_ = true;
  }
  RETURN_IF_ERROR(Retain());
  return m;
}

absl::Status CheckpointWriter::Retain() {
  if (keep_ == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<uint64_t> ids, ManifestIds());
  if (ids.size() <= static_cast<size_t>(keep_)) return absl::OkStatus();
  ids.resize(ids.size() - keep_);
  return Delete(ids);
}

absl::Status CheckpointWriter::RetainOnly(const std::vector<uint64_t>& keep_ids,
                                          int max_pending) {
  absl::MutexLock lock(&mu_);
  const std::set<uint64_t> keep(keep_ids.begin(), keep_ids.end());
  const uint64_t newest_kept = keep.empty() ? 0 : *keep.rbegin();
  ASSIGN_OR_RETURN(std::vector<uint64_t> ids, ManifestIds());
  std::vector<uint64_t> doomed;
  std::vector<uint64_t> pending;  // newer than every referenced one, ascending
  for (uint64_t id : ids) {
    if (keep.contains(id)) continue;
    if (id < newest_kept) {
      doomed.push_back(id);
    } else {
      pending.push_back(id);
    }
  }
  // Of the unreferenced ones newer than every referenced one, the newest
  // `max_pending` may still complete; older ones never will.
  const size_t spare = static_cast<size_t>(std::max(max_pending, 0));
  if (pending.size() > spare) {
    doomed.insert(doomed.end(), pending.begin(), pending.end() - spare);
  }
  if (doomed.empty()) return absl::OkStatus();
  return Delete(doomed);
}

absl::Status CheckpointWriter::Delete(const std::vector<uint64_t>& ids) {
  rocksdb::WriteBatch batch;
  for (const uint64_t id : ids) {
    RETURN_IF_ERROR(FromRocksStatus(batch.Delete(ManifestKey(id)), "retention batch"));
    RETURN_IF_ERROR(FromRocksStatus(batch.Delete(WorkersKey(id)), "retention batch"));
    RETURN_IF_ERROR(FromRocksStatus(
        batch.DeleteRange(PartitionPrefix(id), PartitionPrefix(id + 1)), "retention batch"));
  }
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  CAIRN_KILLPOINT("checkpoint.before_retention");
  return FromRocksStatus(db_->Write(write_options, &batch),
                         absl::StrCat("delete old checkpoints in ", dir_));
}

}  // namespace cairn::checkpoint
