#include "server/shard/cold_rows.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/rocksdb_status.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/cache.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_buffer_manager.h"
#include "rocksdb/write_batch.h"

namespace cairn {
namespace {

constexpr size_t kKeyBytes = 12;

void PutBigEndian(uint64_t v, int bytes, char* out) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
}

uint64_t GetBigEndian(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::string RowKey(uint32_t table, Key key) {
  std::string k(kKeyBytes, '\0');
  PutBigEndian(table, 4, k.data());
  PutBigEndian(key, 8, k.data() + 4);
  return k;
}

std::string TablePrefix(uint32_t table) {
  std::string k(4, '\0');
  PutBigEndian(table, 4, k.data());
  return k;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ColdRowStore>> ColdRowStore::Open(const std::string& dir,
                                                                 uint64_t memory_bytes) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cold tier: cannot create the directory ", dir, ": ", ec.message()));
  }
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = false;
  // A cache of evicted rows, rebuilt by every incarnation: no log to replay.
  options.max_open_files = 256;
  // One budget for RocksDB's memory: blocks read (data, index and filter,
  // which otherwise stay on the heap for every open file) and, charged to
  // the same cache, the memtables.
  const size_t budget = static_cast<size_t>(std::max<uint64_t>(memory_bytes, 4 << 20));
  std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(budget);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  options.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(budget / 2, cache);
  options.write_buffer_size = budget / 8;
  options.max_write_buffer_number = 2;
  // Rows of trained floats barely compress; reading them back should not
  // pay for decompression.
  options.compression = rocksdb::kNoCompression;
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::DB::Open(options, dir, &raw),
                                  absl::StrCat("cold tier: open ", dir)));
  LOG_INFO("cold tier (evicted embedding rows) in {}, RocksDB memory within {} bytes", dir,
           budget);
  return std::unique_ptr<ColdRowStore>(
      new ColdRowStore(dir, std::unique_ptr<rocksdb::DB>(raw)));
}

ColdRowStore::ColdRowStore(std::string dir, std::unique_ptr<rocksdb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

ColdRowStore::~ColdRowStore() {
  if (db_ != nullptr) db_->Close().PermitUncheckedError();
  db_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

absl::Status ColdRowStore::Put(uint32_t table, absl::Span<const Row> rows) {
  rocksdb::WriteBatch batch;
  std::string value;
  for (const Row& r : rows) {
    value.assign(8 + (r.values.size() + r.slots.size()) * sizeof(float), '\0');
    PutBigEndian(static_cast<uint64_t>(r.step), 8, value.data());
    if (!r.values.empty()) {
      std::memcpy(value.data() + 8, r.values.data(), r.values.size() * sizeof(float));
    }
    if (!r.slots.empty()) {
      std::memcpy(value.data() + 8 + r.values.size() * sizeof(float), r.slots.data(),
                  r.slots.size() * sizeof(float));
    }
    batch.Put(RowKey(table, r.key), value);
  }
  rocksdb::WriteOptions write;
  write.disableWAL = true;  // nothing to recover: the store dies with the incarnation
  return FromRocksStatus(db_->Write(write, &batch),
                         absl::StrCat("cold tier: write ", rows.size(), " rows of table ", table));
}

absl::Status ColdRowStore::ReadValues(uint32_t table, absl::Span<const Key> keys,
                                      size_t values_per_row, size_t slots_per_row,
                                      absl::Span<float> values, std::vector<bool>* found) const {
  const size_t n = keys.size();
  found->assign(n, false);
  if (n == 0) return absl::OkStatus();
  std::vector<std::string> key_bytes(n);
  std::vector<rocksdb::Slice> slices(n);
  for (size_t i = 0; i < n; ++i) {
    key_bytes[i] = RowKey(table, keys[i]);
    slices[i] = key_bytes[i];
  }
  std::vector<rocksdb::PinnableSlice> read(n);
  std::vector<rocksdb::Status> statuses(n);
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), n, slices.data(), read.data(),
                statuses.data());
  const size_t expected = 8 + (values_per_row + slots_per_row) * sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    if (statuses[i].IsNotFound()) continue;
    RETURN_IF_ERROR(FromRocksStatus(
        statuses[i], absl::StrCat("cold tier: read table ", table, " key ", keys[i])));
    if (read[i].size() != expected) {
      return absl::DataLossError(absl::StrCat("cold tier: table ", table, " key ", keys[i],
                                              " holds ", read[i].size(), " bytes, not ",
                                              expected));
    }
    std::memcpy(values.data() + i * values_per_row, read[i].data() + 8,
                values_per_row * sizeof(float));
    (*found)[i] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ColdRowStore::Get(uint32_t table, Key key, bool remove, int64_t* step,
                                       absl::Span<float> values, absl::Span<float> slots) {
  const std::string k = RowKey(table, key);
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), k, &value);
  if (s.IsNotFound()) return false;
  RETURN_IF_ERROR(FromRocksStatus(s, absl::StrCat("cold tier: read table ", table, " key ", key)));
  const size_t expected = 8 + (values.size() + slots.size()) * sizeof(float);
  if (value.size() != expected) {
    return absl::DataLossError(absl::StrCat("cold tier: table ", table, " key ", key, " holds ",
                                            value.size(), " bytes, not ", expected));
  }
  *step = static_cast<int64_t>(GetBigEndian(value.data(), 8));
  if (!values.empty()) std::memcpy(values.data(), value.data() + 8, values.size() * sizeof(float));
  if (!slots.empty()) {
    std::memcpy(slots.data(), value.data() + 8 + values.size() * sizeof(float),
                slots.size() * sizeof(float));
  }
  if (remove) {
    rocksdb::WriteOptions write;
    write.disableWAL = true;
    RETURN_IF_ERROR(FromRocksStatus(db_->Delete(write, k),
                                    absl::StrCat("cold tier: delete table ", table, " key ", key)));
  }
  return true;
}

absl::Status ColdRowStore::ForEach(uint32_t table, size_t values_per_row, size_t slots_per_row,
                                   const RowFn& row) const {
  const std::string prefix = TablePrefix(table);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  std::vector<float> values(values_per_row), slots(slots_per_row);
  const size_t expected = 8 + (values_per_row + slots_per_row) * sizeof(float);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != kKeyBytes) {
      return absl::DataLossError(absl::StrCat("cold tier: a key of ", it->key().size(),
                                              " bytes in table ", table));
    }
    const Key key = GetBigEndian(it->key().data() + 4, 8);
    if (it->value().size() != expected) {
      return absl::DataLossError(absl::StrCat("cold tier: table ", table, " key ", key, " holds ",
                                              it->value().size(), " bytes, not ", expected));
    }
    const char* v = it->value().data();
    const int64_t step = static_cast<int64_t>(GetBigEndian(v, 8));
    if (values_per_row > 0) std::memcpy(values.data(), v + 8, values_per_row * sizeof(float));
    if (slots_per_row > 0) {
      std::memcpy(slots.data(), v + 8 + values_per_row * sizeof(float),
                  slots_per_row * sizeof(float));
    }
    RETURN_IF_ERROR(row(key, step, values, slots));
  }
  return FromRocksStatus(it->status(), absl::StrCat("cold tier: scan table ", table));
}

absl::StatusOr<uint64_t> ColdRowStore::DeleteIf(uint32_t table,
                                                const std::function<bool(Key)>& drop) {
  const std::string prefix = TablePrefix(table);
  rocksdb::WriteBatch batch;
  uint64_t n = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      if (it->key().size() != kKeyBytes) continue;
      if (drop(GetBigEndian(it->key().data() + 4, 8))) {
        batch.Delete(it->key());
        ++n;
      }
    }
    RETURN_IF_ERROR(FromRocksStatus(it->status(), absl::StrCat("cold tier: scan table ", table)));
  }
  rocksdb::WriteOptions write;
  write.disableWAL = true;
  RETURN_IF_ERROR(FromRocksStatus(db_->Write(write, &batch),
                                  absl::StrCat("cold tier: delete from table ", table)));
  return n;
}

}  // namespace cairn
