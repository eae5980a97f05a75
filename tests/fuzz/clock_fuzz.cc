// Fuzz target: a sequence of ClockRequests, each as the server's Clock
// handler gets it (server/shard/rpc/parameter_service.cc: parsed, then
// Shard::Clock), on a server holding the tables of fuzz_shard.h (map version
// 1, workers 0 and 1, a checkpoint snapshot every 2 clocks) with a pull of
// worker 0 waiting for clock 2.
//
// Input: frames (fuzz_util.h SplitFrames), at most 32. Kind even: the bytes
// are a ClockRequest. Kind odd: a valid push of every table by worker
// (kind >> 1) & 1 at the clock that worker last reported, so that ticks have
// buffered gradients to apply.
//
// Checks beyond the sanitizers: a refused clock leaves every stored value,
// clock and sequence floor as it was; the waiting pull is answered exactly
// once (at the latest by Shutdown).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/time_source.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  static const v1::JobSpec job = fuzz::FuzzJob();
  static const std::vector<std::vector<Key>> keys = fuzz::AllKeys(job);
  Shard shard(0, job, nullptr);
  int snapshots = 0;
  shard.SetCheckpointSink(2, [&snapshots](ShardSnapshot) { ++snapshots; });
  if (absl::Status s = shard.InstallMap(fuzz::SoloMap()); !s.ok()) {
    fuzz::Fail(absl::StrCat("install map: ", s.message()));
  }
  v1::PullRequest pull = fuzz::MakePull(1, 2, {{0}});
  v1::PullResponse response;
  int calls = 0;
  shard.Pull(&pull, &response, absl::InfiniteFuture(), [&calls](absl::Status) { ++calls; });

  int64_t clock_of[2] = {0, 0};
  uint64_t sequence_of[2] = {0, 0};
  for (const fuzz::Frame& frame : fuzz::SplitFrames(data, size, 32)) {
    if (frame.kind % 2 == 1) {
      const uint32_t worker = (frame.kind >> 1) & 1;
      (void)shard.Push(fuzz::MakePush(job, 1, 0, worker, ++sequence_of[worker],
                                      clock_of[worker], keys));
      continue;
    }
    v1::ClockRequest request;
    if (!request.ParseFromArray(frame.bytes.data(), static_cast<int>(frame.bytes.size()))) {
      continue;
    }
    const std::string before = fuzz::StateBytes(shard);
    absl::StatusOr<int64_t> min_clock = shard.Clock(request);
    if (!min_clock.ok()) {
      if (const std::string after = fuzz::StateBytes(shard); after != before) {
        fuzz::Fail(absl::StrCat("a refused clock changed the server's state (",
                                min_clock.status().ToString(), "): ",
                                fuzz::FirstDifference(before, after)));
      }
      continue;
    }
    if (request.worker_id() < 2) clock_of[request.worker_id()] = request.clock();
  }
  if (calls > 1) fuzz::Fail(absl::StrCat("a pull's callback ran ", calls, " times"));
  shard.Shutdown();
  if (calls != 1) fuzz::Fail(absl::StrCat("a pull's callback ran ", calls, " times"));
  return 0;
}
