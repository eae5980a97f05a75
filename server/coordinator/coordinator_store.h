// The coordinator's RocksDB store: one database that holds both the
// checkpoint records (checkpoint_registry.h) and the coordinator's own state
// (members and partition map, state_codec.h), so a restarted coordinator
// finds both in one place.
//
// Keys (first byte = tag; big-endian integers, so bytewise order is numeric):
//   'R' id:u64   a complete checkpoint's record (CheckpointRegistry)
//   'S'          the coordinator's state (EncodeState / DecodeState)
#ifndef CAIRN_SERVER_COORDINATOR_COORDINATOR_STORE_H_
#define CAIRN_SERVER_COORDINATOR_COORDINATOR_STORE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace rocksdb {
class DB;
}

namespace cairn {

inline constexpr char kRecordTag = 'R';
inline constexpr char kStateKey[] = "S";

// Thread-safe (rocksdb::DB is).
class CoordinatorStore {
 public:
  // Opens the store at `dir` (created, parents included, when `create`).
  // Errors name the directory: NotFound (no store and !create),
  // FailedPrecondition (another live process holds it), DataLoss, Unavailable.
  static absl::StatusOr<std::unique_ptr<CoordinatorStore>> Open(const std::string& dir,
                                                                bool create);

  // The value of `key` in the store at `dir`, read without writing anything
  // (also while a live process holds the store); nullopt when there is no
  // store or no such key. Errors as Open.
  static absl::StatusOr<std::optional<std::string>> Peek(const std::string& dir,
                                                         const std::string& key);

  // Closes the database (every write was synced when made).
  ~CoordinatorStore();

  CoordinatorStore(const CoordinatorStore&) = delete;
  CoordinatorStore& operator=(const CoordinatorStore&) = delete;

  // nullopt when the key is absent. Errors: Unavailable, DataLoss.
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) const;
  // A synced single-key write or delete. Errors: Unavailable naming the store.
  absl::Status Put(const std::string& key, const std::string& value);
  absl::Status Delete(const std::string& key);

  // The database, for batches and iteration (CheckpointRegistry). Owned by
  // this; valid while it lives.
  rocksdb::DB* db() const { return db_.get(); }
  const std::string& dir() const { return dir_; }

 private:
  CoordinatorStore(std::string dir, std::unique_ptr<rocksdb::DB> db);

  const std::string dir_;
  const std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_COORDINATOR_STORE_H_
