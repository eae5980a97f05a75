#include "server/coordinator/checkpoint_registry.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/killpoint.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "server/coordinator/coordinator_metrics.h"
#include "server/coordinator/coordinator_store.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/checkpoint/checkpoint_format.h"
#include "common/rocksdb_status.h"

namespace cairn {
namespace {

std::string RecordKey(uint64_t id) {
  std::string k(1, kRecordTag);
  checkpoint::PutBigEndian64(id, &k);
  return k;
}

std::string EncodeRecord(const v1::CheckpointRecord& record) {
  std::string body;
  record.SerializeToString(&body);
  const uint64_t sum = checkpoint::Checksum(body);
  std::string value(sizeof(sum), '\0');
  std::memcpy(value.data(), &sum, sizeof(sum));
  return value + body;
}

absl::StatusOr<v1::CheckpointRecord> DecodeRecord(const std::string& value,
                                                  const std::string& what) {
  uint64_t sum = 0;
  if (value.size() < sizeof(sum)) return absl::DataLossError(what + ": record too short");
  std::memcpy(&sum, value.data(), sizeof(sum));
  const std::string body = value.substr(sizeof(sum));
  v1::CheckpointRecord record;
  if (checkpoint::Checksum(body) != sum || !record.ParseFromString(body)) {
    return absl::DataLossError(what + ": record fails its checksum");
  }
  return record;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointRegistry>> CheckpointRegistry::Open(
    CoordinatorStore* store, uint32_t num_tables, uint32_t num_partitions, int keep,
    CoordinatorMetrics* metrics) {
  if (keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint records ", store->dir(), ": keep must be >= 1, got ", keep));
  }
  std::unique_ptr<CheckpointRegistry> registry(
      new CheckpointRegistry(store, num_tables, num_partitions, keep, metrics));
  {
    absl::MutexLock lock(&registry->mu_);
    RETURN_IF_ERROR(registry->Load());
  }
  return registry;
}

absl::StatusOr<std::vector<v1::CheckpointRecord>> CheckpointRegistry::ReadRecords(
    const std::string& store_dir) {
  rocksdb::Options options;
  options.paranoid_checks = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status opened = rocksdb::DB::OpenForReadOnly(options, store_dir, &raw);
  if (opened.IsInvalidArgument() || opened.IsPathNotFound() || opened.IsNotFound()) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint records in ", store_dir, " (no job wrote checkpoints here)"));
  }
  RETURN_IF_ERROR(FromRocksStatus(
      opened, absl::StrCat("open checkpoint records ", store_dir)));
  std::unique_ptr<rocksdb::DB> db(raw);
  std::vector<v1::CheckpointRecord> records;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kRecordTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const uint64_t id = it->key().size() == 9 ? checkpoint::GetBigEndian64(it->key().data() + 1) : 0;
    ASSIGN_OR_RETURN(v1::CheckpointRecord record,
                     DecodeRecord(it->value().ToString(),
                                  absl::StrCat(store_dir, ": checkpoint record ", id)));
    records.push_back(std::move(record));
  }
  RETURN_IF_ERROR(FromRocksStatus(
      it->status(), absl::StrCat("read checkpoint records ", store_dir)));
  return records;
}

CheckpointRegistry::CheckpointRegistry(CoordinatorStore* store, uint32_t num_tables,
                                       uint32_t num_partitions, int keep,
                                       CoordinatorMetrics* metrics)
    : store_(store),
      dir_(store->dir()),
      num_tables_(num_tables),
      num_partitions_(num_partitions),
      keep_(keep),
      metrics_(metrics) {}

absl::Status CheckpointRegistry::Load() {
  std::unique_ptr<rocksdb::Iterator> it(store_->db()->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kRecordTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const uint64_t id = it->key().size() == 9 ? checkpoint::GetBigEndian64(it->key().data() + 1) : 0;
    ASSIGN_OR_RETURN(v1::CheckpointRecord record,
                     DecodeRecord(it->value().ToString(),
                                  absl::StrCat(dir_, ": checkpoint record ", id)));
    records_.push_back(std::move(record));
  }
  return FromRocksStatus(it->status(), absl::StrCat("read checkpoint records ", dir_));
}

absl::StatusOr<CheckpointRegistry::ReportResult> CheckpointRegistry::Report(
    const v1::ReportCheckpointRequest& request) {
  for (const v1::CheckpointPartition& p : request.partitions()) {
    if (p.table_id() >= num_tables_ || p.partition() >= num_partitions_ ||
        p.server_id() != request.server_id()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint report from server ", request.server_id(), " at clock ", request.clock(),
          ": table id ", p.table_id(), " partition ", p.partition(), " (server ", p.server_id(),
          ") is out of range (", num_tables_, " tables, ", num_partitions_,
          " partitions) or another server's"));
    }
  }
  absl::MutexLock lock(&mu_);
  ReportResult result;
  // A report repeated after a lost answer names a store checkpoint already
  // in a record.
  const uint64_t checkpoint_id =
      request.partitions().empty() ? 0 : request.partitions(0).checkpoint_id();
  const bool done = std::any_of(records_.begin(), records_.end(), [&](const auto& r) {
    return r.clock() == request.clock() &&
           std::any_of(r.partitions().begin(), r.partitions().end(), [&](const auto& p) {
             return p.server_id() == request.server_id() && p.checkpoint_id() == checkpoint_id;
           });
  });
  if (!done) {
    auto& pieces = pending_[request.clock()];
    for (const v1::CheckpointPartition& p : request.partitions()) {
      pieces[{p.table_id(), p.partition()}] = p;
    }
    if (pieces.size() == static_cast<size_t>(num_tables_) * num_partitions_) {
      RETURN_IF_ERROR(Complete(request.clock()));
      result.complete = true;
    }
  } else {
    result.complete = true;
  }
  result.keep_ids = KeepIds(request.server_id());
  return result;
}

absl::Status CheckpointRegistry::Complete(int64_t clock) {
  v1::CheckpointRecord record;
  record.set_id(records_.empty() ? 1 : records_.back().id() + 1);
  record.set_clock(clock);
  record.set_unix_millis(absl::ToUnixMillis(absl::Now()));
  for (const auto& [key, piece] : pending_[clock]) *record.add_partitions() = piece;
  rocksdb::WriteBatch batch;
  RETURN_IF_ERROR(FromRocksStatus(
      batch.Put(RecordKey(record.id()), EncodeRecord(record)), "checkpoint record batch"));
  const size_t total = records_.size() + 1;
  const size_t drop = total > static_cast<size_t>(keep_) ? total - keep_ : 0;
  for (size_t i = 0; i < drop; ++i) {
    RETURN_IF_ERROR(FromRocksStatus(batch.Delete(RecordKey(records_[i].id())),
                                                "checkpoint record batch"));
  }
  rocksdb::WriteOptions options;
  options.sync = true;
  CAIRN_KILLPOINT("registry.before_record");
  RETURN_IF_ERROR(FromRocksStatus(
      store_->db()->Write(options, &batch), absl::StrCat("write checkpoint record to ", dir_)));
  records_.erase(records_.begin(), records_.begin() + drop);
  records_.push_back(record);
  // Pieces of this clock and of older, never completed ones are done with.
  pending_.erase(pending_.begin(), pending_.upper_bound(clock));
  LOG_INFO("checkpoint at clock {} complete: {} partitions recorded as checkpoint record {}",
           clock, record.partitions_size(), record.id());
  if (metrics_ != nullptr) metrics_->CheckpointCompleted(record.unix_millis() / 1000.0);
  return absl::OkStatus();
}

std::vector<uint64_t> CheckpointRegistry::KeepIds(uint32_t server_id) const {
  std::vector<uint64_t> ids;
  for (const v1::CheckpointRecord& r : records_) {
    for (const v1::CheckpointPartition& p : r.partitions()) {
      if (p.server_id() == server_id) ids.push_back(p.checkpoint_id());
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

const v1::CheckpointRecord* CheckpointRegistry::FindLocked(int64_t clock,
                                                           uint64_t after_id) const {
  for (const v1::CheckpointRecord& r : records_) {
    if (r.clock() == clock && r.id() > after_id) return &r;
  }
  return nullptr;
}

std::optional<v1::CheckpointRecord> CheckpointRegistry::Find(int64_t clock,
                                                             uint64_t after_id) const {
  absl::MutexLock lock(&mu_);
  if (const v1::CheckpointRecord* r = FindLocked(clock, after_id)) return *r;
  return std::nullopt;
}

absl::StatusOr<v1::CheckpointRecord> CheckpointRegistry::WaitComplete(int64_t clock,
                                                                      uint64_t after_id,
                                                                      absl::Time deadline) {
  struct Wanted {
    const CheckpointRegistry* self;
    int64_t clock;
    uint64_t after_id;
  } wanted{this, clock, after_id};
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(absl::Condition(
                            +[](Wanted* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                              return w->self->FindLocked(w->clock, w->after_id) != nullptr;
                            },
                            &wanted),
                        deadline);
  if (const v1::CheckpointRecord* r = FindLocked(clock, after_id)) return *r;
  std::vector<std::string> missing;
  const auto pending = pending_.find(clock);
  for (uint32_t t = 0; t < num_tables_ && missing.size() < 8; ++t) {
    for (uint32_t p = 0; p < num_partitions_ && missing.size() < 8; ++p) {
      if (pending == pending_.end() || !pending->second.contains({t, p})) {
        missing.push_back(absl::StrCat(t, "/", p));
      }
    }
  }
  return absl::DeadlineExceededError(
      absl::StrCat("checkpoint at clock ", clock,
                   " not complete in time; missing table/partition ", absl::StrJoin(missing, ", ")));
}

std::vector<v1::CheckpointRecord> CheckpointRegistry::List() const {
  absl::MutexLock lock(&mu_);
  return records_;
}

uint64_t CheckpointRegistry::LatestId() const {
  absl::MutexLock lock(&mu_);
  return records_.empty() ? 0 : records_.back().id();
}

}  // namespace cairn
