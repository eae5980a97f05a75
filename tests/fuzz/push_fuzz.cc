// Fuzz target: the bytes of a PushRequest, as the server's Push handler gets
// them (server/shard/rpc/parameter_service.cc): read off slices of 7 bytes
// each (common/received_tables.h, each table's inline values left in
// pieces of them), values resolved in the worker's shared region when the
// request names one, then Shard::Push on
// a server holding the tables of fuzz_shard.h (map version 1, workers 0 and
// 1). Both workers then tick to clock 1, so a buffered BSP push is applied.
//
// Checks beyond the sanitizers: a rejected push leaves every stored value,
// clock and sequence floor as it was (Shard's promise: validated before
// anything changes).
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/received_tables.h"
#include "server/shard/rpc/replica_forwarder.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  // Slices of a few bytes: values cut anywhere, a float in two pieces.
  constexpr size_t kSliceBytes = 7;
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < size; at += kSliceBytes) {
    slices.emplace_back(data + at, std::min(kSliceBytes, size - at));
  }
  ReceivedTables received;
  *received.bytes() = grpc::ByteBuffer(slices.data(), slices.size());
  v1::PushRequest request;
  if (!received
           .Read(&request, v1::PushRequest::kTablesFieldNumber,
                 [&request] { return request.add_tables(); },
                 {"the PushRequest", absl::StatusCode::kInvalidArgument})
           .ok()) {
    return 0;  // answered with the error; the shard never sees it
  }
  for (v1::TableValues& t : *request.mutable_tables()) {
    if (t.has_shared()) t.mutable_shared()->set_region(fuzz::RemapRegion(t.shared().region()));
  }
  static const v1::JobSpec job = fuzz::FuzzJob();
  Shard shard(0, job, nullptr);
  if (absl::Status s = shard.InstallMap(fuzz::SoloMap()); !s.ok()) {
    fuzz::Fail(absl::StrCat("install map: ", s.message()));
  }
  const std::string before = fuzz::StateBytes(shard);

  // ParameterService::Push: values in the worker's region are applied from there.
  std::optional<SharedRegions::PushValues> shared;
  if (SharedRegions::UsesRegion(request)) {
    absl::StatusOr<SharedRegions::PushValues> values =
        fuzz::TheRegion().regions.ResolvePush(request, received.all_values());
    if (!values.ok()) return 0;  // answered with the error; the shard never sees it
    shared = *std::move(values);
  }
  absl::StatusOr<bool> duplicate =
      shard.Push(request, shared.has_value() ? absl::MakeConstSpan(shared->values)
                                             : received.all_values());
  if (!duplicate.ok()) {
    if (const std::string after = fuzz::StateBytes(shard); after != before) {
      fuzz::Fail(absl::StrCat("a refused push changed the server's state (",
                              duplicate.status().ToString(), "): ",
                              fuzz::FirstDifference(before, after)));
    }
  } else {
    uint64_t version = 0;
    (void)shard.ForwardTargets(request, &version);  // no backups in this map
    // What a primary sends its backups: an ordinary PushRequest again.
    const std::shared_ptr<const PushPayload> copy = ReplicaForwarder::Copy(
        request,
        shared.has_value() ? absl::MakeConstSpan(shared->values) : received.all_values(),
        version);
    (void)copy->ToProto();
  }
  // Close iteration 0 (and the push's own iteration, when small) so that
  // buffered BSP gradients are applied; statuses do not matter here.
  int64_t until = 1;
  if (request.clock() >= 1 && request.clock() < 64) until = request.clock() + 1;
  for (uint32_t worker : {0u, 1u}) (void)shard.Clock(fuzz::MakeClock(1, worker, until));
  (void)fuzz::StateBytes(shard);
  shard.Shutdown();
  return 0;
}
