// Fuzz target: the bytes of a PullRequest, as the server's Pull handler gets
// them (server/shard/rpc/parameter_service.cc): parsed, the answer's room in
// the worker's shared region resolved when the request reserves some, then
// Shard::Pull on a server holding the tables of fuzz_shard.h (map version 1,
// workers 0 and 1) after one applied iteration of pushes to every table.
// A pull that waits is failed by ExpireWaiters past its deadline.
//
// Checks beyond the sanitizers: the callback runs exactly once; a pull
// changes no stored value (rows never pushed are read from the initializer,
// not created; no gradients are buffered, so the clock tick a pull carries
// applies none); a refused pull (other than one that waited past its
// deadline) changes no clock either.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/time_source.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  v1::PullRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (request.has_reply_to()) {
    request.mutable_reply_to()->set_region(fuzz::RemapRegion(request.reply_to().region()));
  }
  static const v1::JobSpec job = fuzz::FuzzJob();
  Shard shard(0, job, nullptr);
  if (absl::Status s = shard.InstallMap(fuzz::SoloMap()); !s.ok()) {
    fuzz::Fail(absl::StrCat("install map: ", s.message()));
  }
  // Iteration 0: both workers push to every key twice (sparse ids are
  // admitted at their second push), then both tick to 1.
  const std::vector<std::vector<Key>> keys = fuzz::AllKeys(job);
  for (uint32_t worker : {0u, 1u}) {
    for (uint64_t seq : {1u, 2u}) {
      (void)shard.Push(fuzz::MakePush(job, 1, 0, worker, seq, 0, keys));
    }
    (void)shard.Clock(fuzz::MakeClock(1, worker, 1));
  }
  const std::string before = fuzz::StateBytes(shard);
  const std::string values_before = fuzz::StateBytes(shard, /*clocks=*/false);

  PullReplyArea area;
  std::shared_ptr<SharedRegion> held;
  if (std::optional<SharedRegions::Reply> reply = fuzz::TheRegion().regions.ResolveReply(request);
      reply.has_value()) {
    area = PullReplyArea{reply->bytes, request.reply_to().region(), request.reply_to().offset()};
    held = std::move(reply->region);
  }
  v1::PullResponse response;
  int calls = 0;
  absl::Status status;
  shard.Pull(&request, &response, MonotonicNow() + absl::Seconds(1),
             [&calls, &status](absl::Status s) {
               ++calls;
               status = std::move(s);
             },
             area);
  if (calls == 0) shard.ExpireWaiters(MonotonicNow() + absl::Hours(1));
  if (calls == 0) fuzz::Fail("a waiting pull was not failed past its deadline");
  if (calls > 1) fuzz::Fail(absl::StrCat("a pull's callback ran ", calls, " times"));
  if (status.ok() && response.tables_size() != request.tables_size()) {
    fuzz::Fail(absl::StrCat("a pull of ", request.tables_size(), " tables answered ",
                            response.tables_size()));
  }
  if (const std::string after = fuzz::StateBytes(shard, false); after != values_before) {
    fuzz::Fail(absl::StrCat("a pull changed stored values (", status.ToString(), "): ",
                            fuzz::FirstDifference(values_before, after)));
  }
  if (!status.ok() && !absl::IsDeadlineExceeded(status)) {
    if (const std::string after = fuzz::StateBytes(shard); after != before) {
      fuzz::Fail(absl::StrCat("a refused pull changed the server's state (", status.ToString(),
                              "): ", fuzz::FirstDifference(before, after)));
    }
  }
  shard.Shutdown();
  if (calls != 1) fuzz::Fail(absl::StrCat("a pull's callback ran ", calls, " times"));
  return 0;
}
