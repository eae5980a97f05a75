// How a shard sums a BSP iteration: in worker-id order, bit for bit, however
// the workers' pushes are cut, whatever order they arrive in, whether their
// keys come ascending (summed from the request) or not (gathered first), and
// with the iteration buffers reused from one iteration to the next; and an
// iteration whose only gradient is a push carrying the tick that closes it,
// applied from the push with that tick, to the same bits; and such a push
// sent while it is written (PushRequest.written), applied as it is written
// and put back whole when refused midway.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "server/shard/push_stream.h"
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

constexpr int kElements = 10;
constexpr int kChunk = 3;  // chunks 0..3; the last holds one float
constexpr uint32_t kWorkers = 3;

v1::TableSpec VectorTable() {
  v1::TableSpec t = ScalarTable("w", v1::CONSISTENCY_BSP);
  t.clear_shape();
  t.add_shape(kElements);
  t.set_chunk_size(kChunk);
  return t;
}

// The same with SGD and momentum: a step's update depends on the last.
v1::TableSpec MomentumVectorTable() {
  v1::TableSpec t = VectorTable();
  t.mutable_optimizer()->set_learning_rate(0.1f);
  t.mutable_optimizer()->set_momentum(0.9f);
  return t;
}

// Worker `w`'s gradient at iteration `t`: magnitudes from 1e-3 to 1e7, so
// that summing in another order rounds differently.
float Grad(uint32_t w, int64_t t, int i) {
  static const float kScale[] = {1e7f, 1e-3f, -1e7f, 3.0f, 0.7f};
  return kScale[(w + static_cast<uint32_t>(t) + static_cast<uint32_t>(i)) % 5] *
         (1.0f + 0.1f * static_cast<float>(i) + 0.01f * static_cast<float>(w));
}

// A push of `chunks` (in that order) of worker `w`'s iteration-`t` gradient.
v1::PushRequest PushChunks(uint32_t w, uint64_t seq, int64_t t, const std::vector<Key>& chunks) {
  v1::PushRequest r = PushScalar(w, seq, t, 0.0f);
  v1::TableValues* tv = r.mutable_tables(0);
  tv->clear_shape();
  tv->add_shape(kElements);
  std::vector<float> values;
  for (Key c : chunks) {
    const int begin = static_cast<int>(c) * kChunk;
    for (int i = begin; i < std::min(kElements, begin + kChunk); ++i) {
      values.push_back(Grad(w, t, i));
    }
  }
  tv->set_keys(KeysToBytes(chunks));
  tv->set_values(FloatsToBytes(values));
  return r;
}

std::vector<float> PullAll(Shard& shard, uint32_t worker, int64_t clock) {
  v1::PullRequest request;
  request.set_map_version(1);
  request.set_worker_id(worker);
  request.set_incarnation(1);
  request.set_clock(clock);
  v1::TableKeys* tk = request.add_tables();
  tk->set_table_id(0);
  tk->set_table("w");
  tk->set_keys(KeysToBytes({0, 1, 2, 3}));
  v1::PullResponse response;
  bool done = false;
  absl::Status status;
  shard.Pull(&request, &response, absl::InfiniteFuture(), [&](absl::Status s) {
    status = s;
    done = true;
  });
  REQUIRE(done);
  REQUIRE(status.ok());
  std::vector<float> out(kElements);
  REQUIRE(response.tables(0).values().size() == kElements * sizeof(float));
  std::memcpy(out.data(), response.tables(0).values().data(), kElements * sizeof(float));
  return out;
}

TEST_CASE("BSP sums each iteration in worker-id order bit for bit, however its pushes are cut "
          "and ordered",
          "[shard][bsp]") {
  Shard shard(0, Job({VectorTable()}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1, 2})).ok());
  uint64_t seq[kWorkers] = {0, 0, 0};
  std::vector<float> expected(kElements, 0.0f);  // SGD, lr 1, from zeros

  // Each iteration, in its arrival order, the pieces: (worker, chunks).
  // Worker 1 cuts its push in two ascending pieces (summed from the
  // request); worker 2 sends its chunks out of order (gathered first).
  using Piece = std::pair<uint32_t, std::vector<Key>>;
  const std::vector<std::vector<Piece>> iterations = {
      {{2, {3, 1, 0, 2}}, {1, {2, 3}}, {0, {0, 1, 2, 3}}, {1, {0, 1}}},
      {{1, {0, 1}}, {0, {0, 1, 2, 3}}, {2, {3, 1, 0, 2}}, {1, {2, 3}}},
      {{0, {0, 1, 2, 3}}, {2, {3, 1, 0, 2}}, {1, {2, 3}}, {1, {0, 1}}},
      // Worker 1 pushes nothing: the mean is over the two that did.
      {{2, {3, 1, 0, 2}}, {0, {0, 1, 2, 3}}},
  };
  for (int64_t t = 0; t < static_cast<int64_t>(iterations.size()); ++t) {
    std::vector<bool> pushed(kWorkers, false);
    for (const Piece& piece : iterations[t]) {
      REQUIRE(shard.Push(PushChunks(piece.first, ++seq[piece.first], t, piece.second)).ok());
      pushed[piece.first] = true;
    }
    for (uint32_t w = 0; w < kWorkers; ++w) REQUIRE(shard.Clock(Tick(w, t + 1)).ok());

    // The same float operations in the same order as the server's.
    int pushers = 0;
    for (bool p : pushed) pushers += p ? 1 : 0;
    for (int i = 0; i < kElements; ++i) {
      bool first = true;
      float sum = 0.0f;
      for (uint32_t w = 0; w < kWorkers; ++w) {
        if (!pushed[w]) continue;
        sum = first ? Grad(w, t, i) : sum + Grad(w, t, i);
        first = false;
      }
      if (pushers > 1) sum *= 1.0f / static_cast<float>(pushers);
      const float g = sum + 0.0f * expected[i];  // SGD without weight decay
      expected[i] = expected[i] - 1.0f * g;
    }
    const std::vector<float> got = PullAll(shard, 0, t + 1);
    for (int i = 0; i < kElements; ++i) {
      INFO("iteration " << t << ", element " << i);
      uint32_t got_bits, want_bits;
      std::memcpy(&got_bits, &got[i], sizeof(float));
      std::memcpy(&want_bits, &expected[i], sizeof(float));
      CHECK(got_bits == want_bits);
    }
  }
}

// A push of worker `w`'s whole iteration-`t` gradient carrying its tick
// (PushRequest.end_clock), as a training step's one request sends it.
v1::PushRequest PushWithTick(uint32_t w, uint64_t seq, int64_t t) {
  v1::PushRequest r = PushChunks(w, seq, t, {0, 1, 2, 3});
  r.set_end_clock(t + 1);
  return r;
}

std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

TEST_CASE("A lone worker's push carrying its tick closes the iteration at once, to the bits of "
          "a push summed and then ticked",
          "[shard][bsp]") {
  const v1::TableSpec spec = MomentumVectorTable();
  Shard alone(0, Job({spec}), nullptr);
  Shard summed(0, Job({spec}), nullptr);
  REQUIRE(alone.InstallMap(Map(4, {0})).ok());
  REQUIRE(summed.InstallMap(Map(4, {0})).ok());
  for (int64_t t = 0; t < 5; ++t) {
    const uint64_t seq = static_cast<uint64_t>(t) + 1;
    // No ClockRequest: the tick came with the push. A pull sent ahead of
    // the worker's tick (after_tick) waits for that tick: answered at once.
    bool ticked = false;
    REQUIRE(alone.Push(PushWithTick(0, seq, t), {}, &ticked).ok());
    CHECK(ticked);
    PullResult ahead;
    StartPull(alone, &ahead, 0, t + 1, absl::InfiniteFuture(), /*after_tick=*/true);
    REQUIRE(ahead.done);
    REQUIRE(ahead.status.ok());
    const std::vector<float> got = PullAll(alone, 0, t + 1);
    // A tick recorded again (a ClockRequest sent after all): a clock that
    // does not move changes nothing.
    REQUIRE(alone.Clock(Tick(0, t + 1)).ok());
    CHECK(Bits(PullAll(alone, 0, t + 1)) == Bits(got));

    // The same gradient without a tick waits in the iteration's sum until
    // the ClockRequest closes it.
    REQUIRE(summed.Push(PushChunks(0, seq, t, {0, 1, 2, 3}), {}, &ticked).ok());
    CHECK_FALSE(ticked);
    PullResult waiting;
    StartPull(summed, &waiting, 0, t + 1, absl::InfiniteFuture(), /*after_tick=*/true);
    CHECK_FALSE(waiting.done);
    REQUIRE(summed.Clock(Tick(0, t + 1)).ok());
    CHECK(waiting.done);
    INFO("iteration " << t);
    CHECK(Bits(PullAll(summed, 0, t + 1)) == Bits(got));
  }
}

// The pull of `keys` a worker sends with its push of iteration `t`, for
// iteration t + 1, answered into the caller's room.
v1::PullRequest RidingPull(int64_t t, const std::vector<Key>& keys) {
  v1::PullRequest pull;
  pull.set_map_version(1);
  pull.set_worker_id(0);
  pull.set_incarnation(1);
  pull.set_clock(t + 1);
  pull.set_after_tick(true);
  v1::TableKeys* tk = pull.add_tables();
  tk->set_table_id(0);
  tk->set_table("w");
  tk->set_keys(KeysToBytes(keys));
  return pull;
}

// `pull`'s answer to be written into `room` by the push it rides on.
PullReadBack ReadBackInto(const v1::PullRequest& pull, std::vector<float>* room) {
  PullReadBack read_back;
  read_back.pull = &pull;
  read_back.room =
      absl::MakeSpan(reinterpret_cast<char*>(room->data()), room->size() * sizeof(float));
  return read_back;
}

// Serves `pull` into `room` (as a worker's region), trusting `read_back`
// where Pull does.
void PullInto(Shard& shard, const v1::PullRequest& pull, std::vector<float>* room,
              const PullReadBack* read_back) {
  PullReplyArea area;
  area.bytes = absl::MakeSpan(reinterpret_cast<char*>(room->data()), room->size() * sizeof(float));
  area.read_back = read_back;
  v1::PullResponse response;
  bool done = false;
  absl::Status status;
  shard.Pull(&pull, &response, absl::InfiniteFuture(),
             [&](absl::Status s) {
               status = s;
               done = true;
             },
             area);
  REQUIRE(done);
  REQUIRE(status.ok());
  REQUIRE(response.tables(0).has_shared());
}

TEST_CASE("A lone worker's push writes its riding pull's answer as its update goes, and a pull "
          "served after a later iteration closed reads the table again",
          "[shard][bsp]") {
  const v1::TableSpec spec = MomentumVectorTable();
  Shard shard(0, Job({spec}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  const float kUnwritten = -12345.0f;
  for (int64_t t = 0; t < 3; ++t) {
    INFO("iteration " << t);
    const v1::PullRequest pull = RidingPull(t, {0, 1, 2, 3});
    std::vector<float> room(kElements, kUnwritten);
    PullReadBack read_back = ReadBackInto(pull, &room);
    bool ticked = false;
    REQUIRE(shard.Push(PushWithTick(0, static_cast<uint64_t>(t) + 1, t), {}, &ticked, &read_back)
                .ok());
    REQUIRE(ticked);
    REQUIRE(read_back.written == std::vector<bool>{true});
    const std::vector<float> table = PullAll(shard, 0, t + 1);
    // Written by the push: the table's values, bit for bit.
    CHECK(Bits(room) == Bits(table));
    // Served now, the pull keeps them (and would have written the same).
    PullInto(shard, pull, &room, &read_back);
    CHECK(Bits(room) == Bits(table));
  }

  // A pull of other keys than the push's is not written by it.
  {
    const v1::PullRequest pull = RidingPull(3, {0, 1});
    std::vector<float> room(2 * kChunk, kUnwritten);
    PullReadBack read_back = ReadBackInto(pull, &room);
    REQUIRE(shard.Push(PushWithTick(0, 4, 3), {}, nullptr, &read_back).ok());
    CHECK(read_back.written == std::vector<bool>{false});
    CHECK(Bits(room) == Bits(std::vector<float>(2 * kChunk, kUnwritten)));
  }

  // What a push wrote for its pull stands no longer once a later
  // iteration closed: that pull, served then, reads the table.
  const v1::PullRequest pull = RidingPull(4, {0, 1, 2, 3});
  std::vector<float> room(kElements, kUnwritten);
  PullReadBack read_back = ReadBackInto(pull, &room);
  REQUIRE(shard.Push(PushWithTick(0, 5, 4), {}, nullptr, &read_back).ok());
  REQUIRE(read_back.written == std::vector<bool>{true});
  const std::vector<float> after_4 = room;
  REQUIRE(shard.Push(PushWithTick(0, 6, 5)).ok());
  const std::vector<float> after_5 = PullAll(shard, 0, 6);
  REQUIRE(Bits(after_5) != Bits(after_4));
  PullInto(shard, pull, &room, &read_back);
  CHECK(Bits(room) == Bits(after_5));
}

TEST_CASE("A push carrying its tick while another worker is still in the iteration is summed, "
          "not applied",
          "[shard][bsp]") {
  Shard shard(0, Job({VectorTable()}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  bool ticked = true;
  REQUIRE(shard.Push(PushWithTick(0, 1, 0), {}, &ticked).ok());
  CHECK_FALSE(ticked);  // summed: the service records the tick after it
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  PullResult waiting;
  StartPull(shard, &waiting, 0, 1);
  CHECK_FALSE(waiting.done);  // worker 1 has not ticked
  // Worker 1's push carries the tick that closes the iteration, but worker
  // 0's gradient is in the sum: both are summed, and the mean applied.
  REQUIRE(shard.Push(PushWithTick(1, 1, 0)).ok());
  CHECK_FALSE(waiting.done);
  REQUIRE(shard.Clock(Tick(1, 1)).ok());
  REQUIRE(waiting.done);
  const std::vector<float> got = PullAll(shard, 0, 1);
  for (int i = 0; i < kElements; ++i) {
    INFO("element " << i);
    const float want = 0.0f - 1.0f * ((Grad(0, 0, i) + Grad(1, 0, i)) * 0.5f);
    CHECK(Bits({got[i]}) == Bits({want}));
  }
}

TEST_CASE("The last worker of an iteration that no other worker pushed to applies its push alone",
          "[shard][bsp]") {
  Shard shard(0, Job({VectorTable()}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0, 1})).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());  // worker 1 ends iteration 0 without a push
  REQUIRE(shard.Push(PushWithTick(0, 1, 0)).ok());
  // Worker 1's pull waits for worker 0's tick: answered at once, the push
  // carried it.
  const std::vector<float> got = PullAll(shard, 1, 1);
  for (int i = 0; i < kElements; ++i) {
    INFO("element " << i);
    const float want = 0.0f - 1.0f * Grad(0, 0, i);  // one contributor: not halved
    CHECK(Bits({got[i]}) == Bits({want}));
  }
}

// A shard of `spec` with every partition, in a ready map of `workers`.
std::unique_ptr<Shard> ReadyShard(const v1::TableSpec& spec, std::vector<uint32_t> workers) {
  auto shard = std::make_unique<Shard>(0, Job({spec}), nullptr);
  REQUIRE(shard->InstallMap(Map(4, std::move(workers))).ok());
  return shard;
}

// A streamed push (PushRequest.written) of PushWithTick's values: `values`
// stands for the worker's region, `written` for its count, which a writer
// thread advances chunk by chunk as it copies the gradient in.
struct StreamedPush {
  std::vector<float> values = std::vector<float>(kElements, std::nanf(""));
  std::atomic<uint64_t> written{0};
  v1::PushRequest request;
  std::vector<ValuePieces> views;

  StreamedPush(uint32_t w, uint64_t seq, int64_t t) : request(PushWithTick(w, seq, t)) {
    request.mutable_tables(0)->clear_values();  // in the "region"
    views.push_back(OnePiece(absl::string_view(reinterpret_cast<const char*>(values.data()),
                                               values.size() * sizeof(float))));
  }
  PushStream Stream(absl::Time deadline = absl::InfiniteFuture()) const {
    const absl::Span<const char> run = views[0].front();
    return PushStream(&written, run.data(), run.data() + run.size(), deadline);
  }
  // Writes worker `w`'s iteration-`t` gradient chunk by chunk, the last
  // first, each after a pause, counting the bytes written back from the
  // end; `bad_chunk` (>= 0) gets a NaN; stops counting before chunk
  // `stop_at` (>= 0).
  std::thread Write(uint32_t w, int64_t t, int bad_chunk = -1, int stop_at = -1) {
    return std::thread([this, w, t, bad_chunk, stop_at] {
      for (int c = (kElements - 1) / kChunk; c >= 0; --c) {
        if (c == stop_at) return;
        absl::SleepFor(absl::Milliseconds(2));
        const int end = std::min(kElements, (c + 1) * kChunk);
        for (int i = c * kChunk; i < end; ++i) values[i] = Grad(w, t, i);
        if (c == bad_chunk) values[c * kChunk + 1] = std::nanf("");
        written.store(static_cast<uint64_t>(kElements - c * kChunk) * sizeof(float),
                      std::memory_order_release);
      }
      written.store(PushStream::kAllWritten, std::memory_order_release);
    });
  }
};

// Worker 0's streamed push of iteration `t` under `sequence`, a NaN in
// chunk 1: refused, naming the key and the push's offset of that NaN
// (chunk 0, not written yet when chunk 1 is checked, is NaN too, and named
// by no error).
void RefuseNaNInChunkOne(Shard& shard, uint64_t sequence, int64_t t) {
  StreamedPush push(0, sequence, t);
  const PushStream stream = push.Stream();
  std::thread writer = push.Write(0, t, /*bad_chunk=*/1);
  const absl::StatusOr<bool> pushed =
      shard.Push(push.request, push.views, nullptr, nullptr, &stream);
  writer.join();
  REQUIRE(absl::IsInvalidArgument(pushed.status()));
  CHECK_THAT(std::string(pushed.status().message()),
             Catch::Contains("table=w key 1") &&
                 Catch::Contains(absl::StrCat("at offset ", kChunk + 1, " ")) &&
                 Catch::Contains("not finite"));
}

TEST_CASE("A lone worker's push sent while it is written is applied chunk by chunk as its count "
          "passes them, to the bits of the push sent whole",
          "[shard][bsp][stream]") {
  std::unique_ptr<Shard> streamed_shard = ReadyShard(MomentumVectorTable(), {0});
  std::unique_ptr<Shard> whole_shard = ReadyShard(MomentumVectorTable(), {0});
  Shard& streamed = *streamed_shard;
  Shard& whole = *whole_shard;
  for (int64_t t = 0; t < 4; ++t) {
    INFO("iteration " << t);
    const uint64_t seq = static_cast<uint64_t>(t) + 1;
    StreamedPush push(0, seq, t);
    const v1::PullRequest pull = RidingPull(t, {0, 1, 2, 3});
    std::vector<float> room(kElements, -1.0f);
    PullReadBack read_back = ReadBackInto(pull, &room);
    const PushStream stream = push.Stream();
    // Values not yet written are NaN: read early, the push would be refused.
    std::thread writer = push.Write(0, t);
    bool ticked = false;
    const absl::StatusOr<bool> pushed =
        streamed.Push(push.request, push.views, &ticked, &read_back, &stream);
    writer.join();
    REQUIRE(pushed.ok());
    CHECK_FALSE(*pushed);
    CHECK(ticked);
    REQUIRE(whole.Push(PushWithTick(0, seq, t)).ok());
    const std::vector<float> want = PullAll(whole, 0, t + 1);
    CHECK(Bits(PullAll(streamed, 0, t + 1)) == Bits(want));
    CHECK(Bits(room) == Bits(want));  // the riding pull's answer, as it went
    // Sent again (its answer was lost): applied once.
    const absl::StatusOr<bool> again = streamed.Push(push.request, push.views, nullptr, nullptr,
                                                     &stream);
    REQUIRE(again.ok());
    CHECK(*again);
  }
}

TEST_CASE("A streamed push found not finite midway, or whose count stalls, is refused whole: "
          "the chunks it updated are put back, values, momentum and steps",
          "[shard][bsp][stream]") {
  std::unique_ptr<Shard> streamed_shard = ReadyShard(MomentumVectorTable(), {0});
  std::unique_ptr<Shard> whole_shard = ReadyShard(MomentumVectorTable(), {0});
  Shard& streamed = *streamed_shard;
  Shard& whole = *whole_shard;
  for (int64_t t = 0; t < 2; ++t) {
    REQUIRE(streamed.Push(PushWithTick(0, static_cast<uint64_t>(t) + 1, t)).ok());
    REQUIRE(whole.Push(PushWithTick(0, static_cast<uint64_t>(t) + 1, t)).ok());
  }
  const std::vector<float> before = PullAll(streamed, 0, 2);

  {
    // The chunks after chunk 1 are applied before chunk 1 shows its NaN.
    RefuseNaNInChunkOne(streamed, 3, 2);
    CHECK(Bits(PullAll(streamed, 0, 2)) == Bits(before));
  }
  {
    // The worker stops before chunk 1 (killed mid-step, say).
    StreamedPush push(0, 3, 2);
    const PushStream stream = push.Stream();
    std::thread writer = push.Write(0, 2, -1, /*stop_at=*/1);
    const absl::Time start = absl::Now();
    const absl::StatusOr<bool> pushed =
        streamed.Push(push.request, push.views, nullptr, nullptr, &stream);
    writer.join();
    REQUIRE(absl::IsDeadlineExceeded(pushed.status()));
    CHECK_THAT(std::string(pushed.status().message()), Catch::Contains("stood still"));
    CHECK(absl::Now() - start < PushStream::kMaxStall + absl::Seconds(5));
    CHECK(Bits(PullAll(streamed, 0, 2)) == Bits(before));
  }
  // The same sequence, sent again whole, is applied (it counted as not
  // applied), and so are the next: the momentum and steps put back give the
  // bits of a table that never saw the refused pushes.
  for (int64_t t = 2; t < 4; ++t) {
    INFO("iteration " << t);
    const absl::StatusOr<bool> pushed =
        streamed.Push(PushWithTick(0, static_cast<uint64_t>(t) + 1, t));
    REQUIRE(pushed.ok());
    CHECK_FALSE(*pushed);
    REQUIRE(whole.Push(PushWithTick(0, static_cast<uint64_t>(t) + 1, t)).ok());
    CHECK(Bits(PullAll(streamed, 0, t + 1)) == Bits(PullAll(whole, 0, t + 1)));
  }
}

// Worker 1's push and both workers' ticks: iteration 0 of a shard of
// workers {0, 1} closes (worker 0's push made).
void FinishIterationZero(Shard& shard) {
  REQUIRE(shard.Push(PushWithTick(1, 1, 0)).ok());
  REQUIRE(shard.Clock(Tick(0, 1)).ok());
  REQUIRE(shard.Clock(Tick(1, 1)).ok());
}

TEST_CASE("A streamed push that does not close its iteration alone is summed once all of it is "
          "written",
          "[shard][bsp][stream]") {
  std::unique_ptr<Shard> streamed_shard = ReadyShard(VectorTable(), {0, 1});
  std::unique_ptr<Shard> whole_shard = ReadyShard(VectorTable(), {0, 1});
  Shard& streamed = *streamed_shard;
  Shard& whole = *whole_shard;
  StreamedPush push(0, 1, 0);
  const PushStream stream = push.Stream();
  std::thread writer = push.Write(0, 0);
  bool ticked = true;
  REQUIRE(streamed.Push(push.request, push.views, &ticked, nullptr, &stream).ok());
  writer.join();
  CHECK_FALSE(ticked);  // summed: worker 1 is still in the iteration
  REQUIRE(whole.Push(PushWithTick(0, 1, 0)).ok());
  for (Shard* shard : {&streamed, &whole}) FinishIterationZero(*shard);
  CHECK(Bits(PullAll(streamed, 1, 1)) == Bits(PullAll(whole, 1, 1)));
}

TEST_CASE("A streamed push that is summed is checked as it is written: a value not finite "
          "refuses it, and nothing of it is summed",
          "[shard][bsp][stream]") {
  std::unique_ptr<Shard> streamed_shard = ReadyShard(VectorTable(), {0, 1});
  std::unique_ptr<Shard> whole_shard = ReadyShard(VectorTable(), {0, 1});
  Shard& streamed = *streamed_shard;
  Shard& whole = *whole_shard;
  RefuseNaNInChunkOne(streamed, 1, 0);
  // The same sequence, sent again whole, is summed once: the iteration
  // ends in the bits of a shard that never saw the refused push.
  for (Shard* shard : {&streamed, &whole}) {
    REQUIRE(shard->Push(PushWithTick(0, 1, 0)).ok());
    FinishIterationZero(*shard);
  }
  CHECK(Bits(PullAll(streamed, 1, 1)) == Bits(PullAll(whole, 1, 1)));
}

}  // namespace
}  // namespace cairn
