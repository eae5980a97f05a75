// Fuzz target: the coordinator's membership requests, each as its gRPC
// service gets them (server/coordinator/coordinator_service.h; the handlers
// do not use their ServerContext, so they are called in-process): a
// sequence of RegisterServer, RegisterWorker, Heartbeat, Leave and
// ReplicaReady requests, with lease expiry on a fake clock in between, on a
// job of 2 servers, 2 workers, 8 partitions and replication 2.
//
// Input: frames (fuzz_util.h SplitFrames), at most 32; kind % 6 picks:
//   0 RegisterServerRequest  1 RegisterWorkerRequest  2 HeartbeatRequest
//   3 LeaveRequest           4 ReplicaReadyRequest
//   5 the fake clock advances by (first two bytes, little-endian) x 10 ms,
//     then leases that ran out expire (CoordinatorState::ExpireLeases)
//
// Checks beyond the sanitizers: the partition map's version never goes
// back; a successful registration's map lists the registered member.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "server/coordinator/coordinator_service.h"
#include "server/coordinator/coordinator_state.h"
#include "tests/fakes/fake_time_source.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

template <typename Message>
bool Parse(const cairn::fuzz::Frame& frame, Message* m) {
  return m->ParseFromArray(frame.bytes.data(), static_cast<int>(frame.bytes.size()));
}

bool Lists(const google::protobuf::RepeatedPtrField<cairn::v1::Member>& members, uint32_t id) {
  for (const cairn::v1::Member& m : members) {
    if (m.id() == id) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  v1::JobSpec job;
  job.set_num_servers(2);
  job.set_num_workers(2);
  job.set_num_partitions(8);
  job.set_replication(2);
  job.set_lease_timeout_ms(5000);
  job.set_heartbeat_interval_ms(500);
  job.set_config_hash("0123456789abcdef");
  FakeTimeSource time;
  CoordinatorState state(job, &time, nullptr);
  CoordinatorService service(&state, nullptr);
  uint64_t version = state.Map().version();
  for (const fuzz::Frame& frame : fuzz::SplitFrames(data, size, 32)) {
    switch (frame.kind % 6) {
      case 0: {
        v1::RegisterServerRequest request;
        v1::RegisterServerResponse response;
        if (!Parse(frame, &request)) break;
        if (service.RegisterServer(nullptr, &request, &response).ok() &&
            !Lists(response.map().servers(), response.server_id())) {
          fuzz::Fail(absl::StrCat("server ", response.server_id(), " registered, not in the map"));
        }
        break;
      }
      case 1: {
        v1::RegisterWorkerRequest request;
        v1::RegisterWorkerResponse response;
        if (!Parse(frame, &request)) break;
        if (service.RegisterWorker(nullptr, &request, &response).ok() &&
            !Lists(response.map().workers(), response.worker_id())) {
          fuzz::Fail(absl::StrCat("worker ", response.worker_id(), " registered, not in the map"));
        }
        break;
      }
      case 2: {
        v1::HeartbeatRequest request;
        v1::HeartbeatResponse response;
        if (Parse(frame, &request)) (void)service.Heartbeat(nullptr, &request, &response);
        break;
      }
      case 3: {
        v1::LeaveRequest request;
        v1::LeaveResponse response;
        if (Parse(frame, &request)) (void)service.Leave(nullptr, &request, &response);
        break;
      }
      case 4: {
        v1::ReplicaReadyRequest request;
        v1::ReplicaReadyResponse response;
        if (Parse(frame, &request)) (void)service.ReplicaReady(nullptr, &request, &response);
        break;
      }
      default: {
        uint64_t ticks = 0;
        for (size_t i = 0; i < 2 && i < frame.bytes.size(); ++i) {
          ticks |= static_cast<uint64_t>(static_cast<uint8_t>(frame.bytes[i])) << (8 * i);
        }
        time.Advance(absl::Milliseconds(10 * static_cast<int64_t>(ticks)));
        (void)state.ExpireLeases();
      }
    }
    const uint64_t now = state.Map().version();
    if (now < version) fuzz::Fail(absl::StrCat("map version went from ", version, " to ", now));
    version = now;
  }
  state.Shutdown();
  return 0;
}
