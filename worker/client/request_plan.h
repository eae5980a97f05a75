// How one pull or push becomes requests: the caller's tables are routed to
// the replica groups that hold their keys under one partition map
// (router.h), each group's share is cut into requests of about
// JobSpec.request_split_bytes of values (shared_memory_split_bytes for a
// group whose primary shares a region with the worker; the caller's choice,
// `split_bytes`), and the request
// messages are built from those pieces; a pull's answer is copied back
// into the caller's buffer. What a request carries is in proto/cairn/v1/shard.proto.
//
// Pure functions over the caller's buffers and a Router: no channel, lock,
// clock or thread. Thread-safe as long as the buffers are not written
// meanwhile.
#ifndef CAIRN_WORKER_CLIENT_REQUEST_PLAN_H_
#define CAIRN_WORKER_CLIENT_REQUEST_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "common/push_payload.h"
#include "worker/client/router.h"

namespace cairn {

// One table's part of a pull or push, checked against its table by the
// client before it gets here.
struct TableInput {
  const v1::TableSpec* spec;
  const Key* keys;      // sparse: the caller's n keys; dense: null (keys are chunks 0..n-1)
  size_t n;             // keys or chunks
  uint64_t num_chunks;  // dense: chunks of spec.chunk_size() floats (the last may be short)
  float* out;           // pull: where values go (the whole tensor, or n rows of spec.width())
  const float* in;      // push: the gradients, laid out as `out`
  std::vector<int64_t> shape = {};  // dense pushes: the caller's; empty: the table's
};

// Elements of a dense table (the product of its shape).
inline uint64_t DenseElements(const v1::TableSpec& spec) {
  uint64_t n = 1;
  for (int64_t d : spec.shape()) n *= static_cast<uint64_t>(d);
  return n;
}

// Floats in dense chunk `chunk` of `in` (the last chunk may be short).
inline uint32_t ChunkLength(const TableInput& in, Key chunk) {
  const uint64_t cs = static_cast<uint64_t>(in.spec->chunk_size());
  const uint64_t total = DenseElements(*in.spec);
  return static_cast<uint32_t>(std::min(cs, total - chunk * cs));
}

// Index `i` of `in` is chunk i of a dense table or keys[i] of a sparse one:
// its key, its float count, and where its floats start in the caller's
// buffer (in floats).
inline Key KeyOf(const TableInput& in, uint32_t i) {
  return in.keys == nullptr ? static_cast<Key>(i) : in.keys[i];
}
inline uint32_t FloatsOf(const TableInput& in, uint32_t i) {
  return in.keys == nullptr ? ChunkLength(in, i) : static_cast<uint32_t>(in.spec->width());
}
inline uint64_t OffsetOf(const TableInput& in, uint32_t i) {
  return in.keys == nullptr ? i * static_cast<uint64_t>(in.spec->chunk_size())
                            : i * static_cast<uint64_t>(in.spec->width());
}

// Indices of some inputs: (input index, indices into that input), in input
// order. Within one entry, indices are in the order the request carries them.
using InputIndices = std::vector<std::pair<size_t, std::vector<uint32_t>>>;

// One request to one replica group's primary.
struct PlannedRequest {
  uint32_t group = 0;
  InputIndices entries;
};

// Routes `inputs` under `router` and cuts each group's share into requests
// whose values (at the wire dtype; keys not counted) reach
// `split_bytes(group)` only when one entry alone does. `only`: null for
// every index of every input; otherwise just these (a pull's cache misses,
// a retry's leftovers), each list ascending for dense inputs. Requests are
// ordered by group, then input, then index; a group's requests follow each
// other.
std::vector<PlannedRequest> PlanRequests(absl::Span<const TableInput> inputs,
                                         const Router& router, const InputIndices* only,
                                         absl::FunctionRef<uint64_t(uint32_t group)> split_bytes);
// The same with one split for every group.
std::vector<PlannedRequest> PlanRequests(absl::Span<const TableInput> inputs,
                                         const Router& router, const InputIndices* only,
                                         uint64_t split_bytes);

// Who sends a request and at which of its clocks.
struct RequestIdentity {
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;  // the coordinator's count of this worker's registrations
  int64_t clock = 0;
};

// The push request of `request` with sequence number `sequence` in its
// group; map_version left 0 (set at each send). float32 values stay in the
// caller's memory (push_payload.h): the caller keeps `inputs`' gradients
// until the payload is released. 16-bit wire dtypes are converted into the
// payload's own buffer.
std::shared_ptr<PushPayload> BuildPushRequest(absl::Span<const TableInput> inputs,
                                              const PlannedRequest& request,
                                              const RequestIdentity& identity, uint64_t sequence);

// Fills `out` with the pull request of `entries` under map `map_version`.
// Returns the value bytes the answer must carry (at the wire dtype).
uint64_t BuildPullRequest(absl::Span<const TableInput> inputs, const InputIndices& entries,
                          const RequestIdentity& identity, uint64_t map_version,
                          v1::PullRequest* out);

// Where the answer to a pull of `entries` would land, when it can be
// written there as it comes (float32 on the wire, every entry's values in
// the caller's memory one right after the other, in the request's order):
// the first value's address; null otherwise. `reply_bytes` is what
// BuildPullRequest returned.
char* ContiguousDestination(absl::Span<const TableInput> inputs, const InputIndices& entries,
                            uint64_t reply_bytes);

// Copies the answer to one entry of a pull, `values` in `dtype` (the
// TableValues' dtype; UNSPECIFIED reads as float32), into `in.out` at
// `indices`, widened to float32. `values` may come in several pieces (as
// gRPC received them: pull_reply_reader.h), cut anywhere, even inside a
// value. False, with nothing promised about `in.out`, when the dtype is not
// a wire dtype or the bytes are not exactly the indices' values. float32
// values already where they belong (answered in place) are not copied.
bool ScatterPulled(const TableInput& in, const std::vector<uint32_t>& indices, v1::DType dtype,
                   absl::Span<const absl::Span<const char>> values);
// The same with the values in one piece.
inline bool ScatterPulled(const TableInput& in, const std::vector<uint32_t>& indices,
                          v1::DType dtype, absl::Span<const char> values) {
  return ScatterPulled(in, indices, dtype, absl::MakeConstSpan(&values, 1));
}

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_REQUEST_PLAN_H_
