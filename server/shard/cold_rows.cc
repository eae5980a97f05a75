#include "server/shard/cold_rows.h"

#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/rocksdb_status.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
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

absl::StatusOr<std::unique_ptr<ColdRowStore>> ColdRowStore::Open(const std::string& dir) {
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
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::DB::Open(options, dir, &raw),
                                  absl::StrCat("cold tier: open ", dir)));
  LOG_INFO("cold tier (evicted embedding rows) in {}", dir);
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
