#include "server/coordinator/coordinator_store.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "common/rocksdb_status.h"

namespace cairn {

absl::StatusOr<std::unique_ptr<CoordinatorStore>> CoordinatorStore::Open(const std::string& dir,
                                                                         bool create) {
  if (create) {
    std::error_code error;
    if (!std::filesystem::create_directories(dir, error) && error) {
      return absl::UnavailableError(
          absl::StrCat("cannot create the coordinator store ", dir, ": ", error.message()));
    }
  }
  rocksdb::Options options;
  options.create_if_missing = create;
  options.paranoid_checks = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status opened = rocksdb::DB::Open(options, dir, &raw);
  if (!create && opened.IsInvalidArgument()) {
    return absl::NotFoundError(absl::StrCat("no coordinator store in ", dir));
  }
  RETURN_IF_ERROR(
      FromRocksStatus(opened, absl::StrCat("open coordinator store ", dir)));
  return std::unique_ptr<CoordinatorStore>(
      new CoordinatorStore(dir, std::unique_ptr<rocksdb::DB>(raw)));
}

absl::StatusOr<std::optional<std::string>> CoordinatorStore::Peek(const std::string& dir,
                                                                  const std::string& key) {
  std::error_code error;
  if (!std::filesystem::exists(dir + "/CURRENT", error)) return std::nullopt;
  rocksdb::Options options;
  options.paranoid_checks = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status opened = rocksdb::DB::OpenForReadOnly(options, dir, &raw);
  if (opened.IsInvalidArgument() || opened.IsPathNotFound() || opened.IsNotFound()) {
    return std::nullopt;
  }
  RETURN_IF_ERROR(
      FromRocksStatus(opened, absl::StrCat("read coordinator store ", dir)));
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string value;
  rocksdb::Status got = db->Get(rocksdb::ReadOptions(), key, &value);
  if (got.IsNotFound()) return std::nullopt;
  RETURN_IF_ERROR(FromRocksStatus(got, absl::StrCat("read coordinator store ", dir)));
  return value;
}

CoordinatorStore::CoordinatorStore(std::string dir, std::unique_ptr<rocksdb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

CoordinatorStore::~CoordinatorStore() {
  (void)db_->Close();  // every write was synced when made
}

absl::StatusOr<std::optional<std::string>> CoordinatorStore::Get(const std::string& key) const {
  std::string value;
  rocksdb::Status got = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (got.IsNotFound()) return std::nullopt;
  RETURN_IF_ERROR(FromRocksStatus(got, absl::StrCat("read coordinator store ", dir_)));
  return value;
}

absl::Status CoordinatorStore::Put(const std::string& key, const std::string& value) {
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocksStatus(db_->Put(options, key, value),
                                     absl::StrCat("write coordinator store ", dir_));
}

absl::Status CoordinatorStore::Delete(const std::string& key) {
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocksStatus(db_->Delete(options, key),
                                     absl::StrCat("write coordinator store ", dir_));
}

}  // namespace cairn
