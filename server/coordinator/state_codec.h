// The coordinator's persisted state (key 'S' of coordinator_store.h): what a
// restarted coordinator needs to go on with the same job: the job it serves,
// the partition map (version, ready, assignments with replica groups) and
// every member ever registered, with ids, state, addresses, incarnations and
// worker clocks. Leases are not stored: a restored member gets a fresh one.
//
// Value layout, little-endian:
//   u64  XXH64 (seed 0) of everything after it
//   u32  format version (kStateFormatVersion)
//   str  serialized cairn.v1.JobSpec
//   str  serialized cairn.v1.PartitionMap
//   u32  number of members, then per member:
//        u8 role, u8 state, u32 id, i32 incarnation, i64 clock,
//        i64 start_clock, str address, str metrics_address
// where str = u32 length + bytes. Readers refuse another version.
#ifndef CAIRN_SERVER_COORDINATOR_STATE_CODEC_H_
#define CAIRN_SERVER_COORDINATOR_STATE_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "server/coordinator/lease_table.h"

namespace cairn {

inline constexpr uint32_t kStateFormatVersion = 1;

struct PersistedState {
  v1::JobSpec job;
  v1::PartitionMap map;
  std::vector<MemberRecord> members;  // last_renewal and lease_expiry are not stored
};

std::string EncodeState(const PersistedState& state);

// Errors: DataLoss naming `what` when the value is short, fails its checksum
// or does not parse; FailedPrecondition when its format version is another.
absl::StatusOr<PersistedState> DecodeState(const std::string& value, const std::string& what);

}  // namespace cairn

#endif  // CAIRN_SERVER_COORDINATOR_STATE_CODEC_H_
