// The cases of cairn-bench: which operation moves which bytes, and the step
// (one iteration) of each method (Cairn's client library, a unary gRPC call,
// a gRPC stream) for it.
#ifndef CAIRN_TOOLS_BENCH_BENCH_CASES_H_
#define CAIRN_TOOLS_BENCH_BENCH_CASES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "tools/bench/bench_reference.h"
#include "worker/client/client.h"

namespace cairn::bench {

// Methods: Cairn's client with the same-host path, Cairn's client through
// gRPC alone, and the references (unary and stream gRPC calls, memcpy).
inline constexpr char kCairnShared[] = "Cairn-shm";
inline constexpr char kCairnGrpc[] = "Cairn-gRPC";
// Cairn-gRPC against a cluster of its own whose server answers every push
// once applied (rpc.push_ack: applied); the other clusters answer a plain
// push once accepted, the default (docs/config.md).
inline constexpr char kCairnGrpcApplied[] = "Cairn-gRPC-applied";
// The same-host path with the caller's values in a buffer the client lent
// from the region (Client::LendSharedBuffer), as cairn-worker keeps its
// model with one server on its host: pushed from and pulled into in place.
inline constexpr char kCairnSharedLent[] = "Cairn-shm-lent";
// The same two over mutual TLS (docs/security.md), against a second cluster
// started with certificates: their ratio to the plaintext rows is TLS's cost.
inline constexpr char kCairnSharedTls[] = "Cairn-shm-TLS";
inline constexpr char kCairnGrpcTls[] = "Cairn-gRPC-TLS";
// The two same-host methods against a cluster of their own whose server polls, as
// cairn-launch's daemons do (rpc.busy_poll: kSlotBusyPoll), measured by a
// client that polls as long: each push or pull goes through the region's
// call slot instead of a gRPC call (docs/shared-memory.md, "Calls through
// the region"). The rows above and the raw gRPC references sleep as they
// wait.
inline constexpr char kCairnSharedSlot[] = "Cairn-shm-slot";
inline constexpr char kCairnSharedLentSlot[] = "Cairn-shm-lent-slot";
inline constexpr absl::Duration kSlotBusyPoll = absl::Milliseconds(2);
inline bool IsTlsMethod(const std::string& method) {
  return method == kCairnSharedTls || method == kCairnGrpcTls;
}
inline bool IsSlotMethod(const std::string& method) {
  return method == kCairnSharedSlot || method == kCairnSharedLentSlot;
}
// The caller's values lie in a buffer lent from the region.
inline bool IsLentMethod(const std::string& method) {
  return method == kCairnSharedLent || method == kCairnSharedLentSlot;
}
inline bool UsesSharedMemory(const std::string& method) {
  return method == kCairnShared || method == kCairnSharedLent || method == kCairnSharedTls ||
         IsSlotMethod(method);
}
inline bool IsCairnMethod(const std::string& method) {
  return method == kCairnShared || method == kCairnSharedLent || method == kCairnGrpc ||
         method == kCairnGrpcApplied || IsTlsMethod(method) || IsSlotMethod(method);
}
// The plaintext method a TLS method is compared with ("" for others).
inline std::string PlaintextOf(const std::string& method) {
  if (method == kCairnSharedTls) return kCairnShared;
  if (method == kCairnGrpcTls) return kCairnGrpc;
  return "";
}

// One operation on one table; each selected method runs it as one row.
struct CaseGroup {
  std::string id;         // as given to --cases: "push-1mib", "sparse-pull", ...
  std::string operation;  // as printed: "push 1 MiB", "pull 4096 rows x 64"
  bool push = false;
  bool sparse = false;
  std::string table;      // Cairn table (bench_cluster.h)
  int64_t num_floats = 0;  // values per iteration
  int64_t rows = 0;        // sparse rows per iteration (distinct keys); 0 for dense
};

// Every case group, in table order: push/pull of 1 MiB, of 16 MiB, then
// sparse push/pull of 4096 rows of width 64.
const std::vector<CaseGroup>& AllCaseGroups();

// The groups named in `ids` (comma-separated, "all" for every group), in
// table order. InvalidArgument naming an unknown id and listing the known ones.
absl::StatusOr<std::vector<CaseGroup>> SelectCaseGroups(const std::string& ids);

// Buffers and steps of one group. The reference steps move the bytes Cairn's
// requests carry: the same value bytes and 8 key bytes per dense chunk or
// sparse row. Not thread-safe; `client` and `reference` must outlive it.
class CaseRunner {
 public:
  // `table` is the group's table as the job configures it. `client` may be
  // null when only reference steps run, `reference` when only Cairn's do.
  CaseRunner(const CaseGroup& group, const v1::TableSpec& table, Client* client,
             ReferenceClient* reference);

  // Allocates the buffers: gradients of 2^-10 (exact in float32), sparse keys
  // drawn from a fixed seed, dense chunk keys from the table's chunk size.
  // With `lend`, the values live in a buffer the client lends
  // (kCairnSharedLent). InvalidArgument when the table does not match the
  // group (kind, size); FailedPrecondition when the client lends no buffer
  // that large.
  absl::Status Prepare(bool lend = false);

  // method: kCairnShared or kCairnGrpc (need the client), "unary" or
  // "stream" (need the reference), "memcpy" (needs neither).
  std::function<absl::Status()> Step(const std::string& method);

  // After Cairn pulls: every pulled value equals the first one (all rows and
  // chunks received the same gradients), else Internal naming the index.
  absl::Status CheckPulledValues() const;

  uint64_t value_bytes() const { return values_.size() * sizeof(float); }
  const std::string& operation() const { return group_.operation; }

 private:
  absl::Status CairnStep();
  absl::Span<const char> KeyBytes() const;
  absl::Span<const char> ValueBytes() const;

  const CaseGroup group_;
  const v1::TableSpec table_;
  Client* const client_;
  ReferenceClient* const reference_;
  std::vector<Key> keys_;      // sparse keys, or dense chunk indices
  absl::Span<float> values_;   // push source or pull destination: one of
  std::vector<float> own_values_;     // the caller's memory
  std::unique_ptr<SharedBuffer> lent_;  // or a buffer the client lent
  std::vector<float> copy_source_;  // memcpy's source
};

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_CASES_H_
