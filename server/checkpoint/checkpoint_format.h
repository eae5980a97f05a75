// On-disk layout of a server's checkpoint store: one RocksDB per server under
// the `checkpoint.dir` of the job config. The prose spec, with the byte
// layout of every value, is docs/checkpoint-format.md; this header holds its
// constants and key builders.
//
// Keys (big-endian integers, so RocksDB's bytewise order is numeric order):
//   'M' id:u64                          manifest of checkpoint `id`
//   'P' id:u64 table:u32 partition:u32  one partition's rows (see PartitionRows)
//   'W' id:u64                          per-worker clocks and push sequence floors
// Data is keyed by logical partition, not by server, so any server can load
// any partition, whatever the number of servers at restore.
//
// Values are little-endian (fixed-width integers, IEEE-754 float32) and carry
// the format version first. A checkpoint exists only if its manifest does; the
// manifest holds the XXH64 (seed 0) of every 'P' and 'W' value it covers.
#ifndef CAIRN_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_
#define CAIRN_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_

#include <bit>
#include <cstdint>
#include <string>

namespace cairn::checkpoint {

static_assert(std::endian::native == std::endian::little,
              "checkpoint values are written as little-endian memory images");

// Bumped on any change to a key or value layout. Readers read every version
// from kOldestFormatVersion on (version 1 manifests carry no table
// partition_offset: it reads as 0; rows before version 3 carry no ids
// waiting for admission) and refuse others.
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr uint32_t kOldestFormatVersion = 1;

inline constexpr char kManifestTag = 'M';
inline constexpr char kPartitionTag = 'P';
inline constexpr char kWorkersTag = 'W';

inline void PutBigEndian64(uint64_t v, std::string* out) {
  for (int s = 56; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}
inline void PutBigEndian32(uint32_t v, std::string* out) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}
inline uint64_t GetBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// 'M' id.
inline std::string ManifestKey(uint64_t id) {
  std::string k(1, kManifestTag);
  PutBigEndian64(id, &k);
  return k;
}
// 'P' id: the prefix of every partition key of checkpoint `id`.
inline std::string PartitionPrefix(uint64_t id) {
  std::string k(1, kPartitionTag);
  PutBigEndian64(id, &k);
  return k;
}
// 'P' id table partition.
inline std::string PartitionKey(uint64_t id, uint32_t table_id, uint32_t partition) {
  std::string k = PartitionPrefix(id);
  PutBigEndian32(table_id, &k);
  PutBigEndian32(partition, &k);
  return k;
}
// 'W' id.
inline std::string WorkersKey(uint64_t id) {
  std::string k(1, kWorkersTag);
  PutBigEndian64(id, &k);
  return k;
}

// A job's checkpoint directory holds one store per server and the
// coordinator's record of complete checkpoints:
//   <dir>/server-<id>   CheckpointWriter / CheckpointReader
//   <dir>/coordinator   server/coordinator/checkpoint_registry.h
inline std::string ServerStoreDir(const std::string& dir, uint32_t server_id) {
  return dir + "/server-" + std::to_string(server_id);
}
inline std::string CoordinatorStoreDir(const std::string& dir) { return dir + "/coordinator"; }

}  // namespace cairn::checkpoint

#endif  // CAIRN_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_
