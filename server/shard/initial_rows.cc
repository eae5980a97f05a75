#include "server/shard/initial_rows.h"

#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/safetensors_import.h"
#include "server/optimizer/optimizer.h"

namespace cairn {
// Reads the partitions of one checkpoint record from the servers' stores.
class RecordSource {
 public:
  RecordSource(std::string dir, v1::CheckpointRecord record)
      : dir_(std::move(dir)), record_(std::move(record)) {
    for (const v1::CheckpointPartition& p : record_.partitions()) {
      pieces_[{p.table_id(), p.partition()}] = &p;
    }
  }

  absl::StatusOr<PartitionRows> Read(const v1::TableSpec& table, uint32_t partition) {
    auto it = pieces_.find({table.id(), partition});
    if (it == pieces_.end()) {
      return absl::DataLossError(absl::StrCat("checkpoint record ", record_.id(), " at clock ",
                                              record_.clock(), " has no partition ", partition,
                                              " of table ", table.name()));
    }
    const v1::CheckpointPartition& piece = *it->second;
    ASSIGN_OR_RETURN(const Store* store, StoreOf(piece.server_id(), piece.checkpoint_id()));
    const checkpoint::PartitionEntry* entry = nullptr;
    for (const checkpoint::PartitionEntry& e : store->manifest.partitions) {
      if (e.table_id == table.id() && e.partition == partition) entry = &e;
    }
    if (entry == nullptr || entry->checksum != piece.checksum()) {
      return absl::DataLossError(absl::StrCat(
          store->reader->dir(), " checkpoint ", piece.checkpoint_id(), ": table ", table.name(),
          " partition ", partition, " differs from checkpoint record ", record_.id()));
    }
    return store->reader->ReadPartition(store->manifest, table.id(), partition);
  }

 private:
  struct Store {
    std::unique_ptr<checkpoint::CheckpointReader> reader;
    checkpoint::Manifest manifest;
  };

  absl::StatusOr<const Store*> StoreOf(uint32_t server_id, uint64_t checkpoint_id) {
    auto& slot = stores_[{server_id, checkpoint_id}];
    if (slot != nullptr) return slot.get();
    auto store = std::make_unique<Store>();
    ASSIGN_OR_RETURN(store->reader,
                     checkpoint::CheckpointReader::Open(checkpoint::ServerStoreDir(dir_, server_id)));
    ASSIGN_OR_RETURN(std::vector<checkpoint::Manifest> manifests, store->reader->List());
    bool found = false;
    for (checkpoint::Manifest& m : manifests) {
      if (m.id == checkpoint_id && m.clock == record_.clock()) {
        store->manifest = std::move(m);
        found = true;
      }
    }
    if (!found) {
      return absl::NotFoundError(absl::StrCat(store->reader->dir(), " lacks checkpoint ",
                                              checkpoint_id, " at clock ", record_.clock()));
    }
    slot = std::move(store);
    return slot.get();
  }

  const std::string dir_;
  const v1::CheckpointRecord record_;
  std::map<std::pair<uint32_t, uint32_t>, const v1::CheckpointPartition*> pieces_;
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<Store>> stores_;
};

absl::StatusOr<std::optional<InitialState>> MakeInitialState(const v1::JobSpec& job) {
  if (job.has_resume_from() && job.resume_from().id() != 0) {
    auto source = std::make_shared<RecordSource>(job.checkpoint().dir(), job.resume_from());
    InitialState state;
    state.start_clock = job.resume_from().clock();
    state.source = absl::StrCat("checkpoint record ", job.resume_from().id(), " (clock ",
                                job.resume_from().clock(), ") in ", job.checkpoint().dir());
    state.loader = [source](const v1::TableSpec& table, uint32_t partition,
                            int /*slots_per_element*/) { return source->Read(table, partition); };
    return state;
  }
  if (!job.checkpoint().init_from().empty()) {
    ASSIGN_OR_RETURN(checkpoint::SafetensorsFile file,
                     checkpoint::ReadSafetensors(job.checkpoint().init_from()));
    auto shared = std::make_shared<checkpoint::SafetensorsFile>(std::move(file));
    auto optimizers = std::make_shared<std::map<uint32_t, std::unique_ptr<Optimizer>>>();
    const uint32_t num_partitions = job.num_partitions();
    for (const v1::TableSpec& t : job.tables()) {
      ASSIGN_OR_RETURN((*optimizers)[t.id()], MakeOptimizer(t.optimizer()));
      // Every table checked against the file now, before this server
      // serves anything: a file that does not fit stops it at its start
      // (exit 2, naming the table and both shapes) instead of at its first
      // map (exit 1). Partition 0's rows are built and dropped.
      RETURN_IF_ERROR(
          checkpoint::InitialRows(*shared, t, num_partitions, 0, *(*optimizers)[t.id()])
              .status());
    }
    InitialState state;
    state.source = job.checkpoint().init_from();
    // Optimizer slots start as a fresh table's (Adagrad's accumulator is not zero).
    state.loader = [shared, optimizers, num_partitions](const v1::TableSpec& table,
                                                        uint32_t partition, int) {
      return checkpoint::InitialRows(*shared, table, num_partitions, partition,
                                     *optimizers->at(table.id()));
    };
    return state;
  }
  return std::nullopt;
}

class CheckpointPartitionReader::Impl : public RecordSource {
 public:
  using RecordSource::RecordSource;
};

CheckpointPartitionReader::CheckpointPartitionReader(std::string dir) : dir_(std::move(dir)) {}
CheckpointPartitionReader::~CheckpointPartitionReader() = default;

absl::StatusOr<PartitionRows> CheckpointPartitionReader::Read(const v1::CheckpointRecord& record,
                                                              const v1::TableSpec& table,
                                                              uint32_t partition) {
  auto& impl = by_record_[record.id()];
  if (impl == nullptr) impl = std::make_unique<Impl>(dir_, record);
  return impl->Read(table, partition);
}

}  // namespace cairn
