// Fuzz target: the ReplicaChunk messages of a replica-group transfer, as the
// server's Replicate handler gets them (server/shard/rpc/parameter_service.cc:
// parsed, then Shard::ReceiveReplica), on a server (id 2) joining both
// replica groups of the tables of fuzz_shard.h (map version 2: server 0 is
// every group's primary, partition p in group p % 2). The chunks carry
// encoded rows (checkpoint codec) and, at the end, push windows and the BSP
// gradients not yet applied, with their sizes.
//
// Input: frames (fuzz_util.h SplitFrames), at most 16, each a ReplicaChunk
// (the kind is ignored). After the last one both workers leave, which applies
// every buffered iteration, and the state is read back.
//
// Checks beyond the sanitizers: a refused chunk leaves every stored value,
// clock and sequence floor as it was.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  static const v1::JobSpec job = fuzz::FuzzJob(2);
  Shard joiner(2, job, nullptr);
  if (absl::Status s = joiner.InstallMap(fuzz::JoinMap(2)); !s.ok()) {
    fuzz::Fail(absl::StrCat("install map: ", s.message()));
  }
  for (const fuzz::Frame& frame : fuzz::SplitFrames(data, size, 16)) {
    v1::ReplicaChunk chunk;
    if (!chunk.ParseFromArray(frame.bytes.data(), static_cast<int>(frame.bytes.size()))) {
      continue;
    }
    const std::string before = fuzz::StateBytes(joiner);
    absl::StatusOr<bool> done = joiner.ReceiveReplica(chunk);
    if (done.ok()) continue;
    if (const std::string after = fuzz::StateBytes(joiner); after != before) {
      fuzz::Fail(absl::StrCat("a refused replica chunk changed the server's state (",
                              done.status().ToString(), "): ",
                              fuzz::FirstDifference(before, after)));
    }
  }
  for (uint32_t worker : {0u, 1u}) {
    (void)joiner.Clock(fuzz::MakeClock(2, worker, 0, /*leaving=*/true));
  }
  (void)fuzz::StateBytes(joiner);
  joiner.Shutdown();
  return 0;
}
