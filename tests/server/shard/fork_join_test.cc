// ForkJoin (server/shard/fork_join.h): every piece runs once; the helper
// runs pieces at the same time as the caller, on another CPU; callers at
// once all finish; small work, or work without a helper, stays on the
// caller in one range.
#include <catch2/catch.hpp>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/cpu_affinity.h"
#include "server/shard/fork_join.h"

namespace cairn {
namespace {

std::unique_ptr<ForkJoin> MakeHelper() {
  std::unique_ptr<ForkJoin> helper = ForkJoin::MakeIfUseful();
  if (helper == nullptr) {
    // One CPU: the helper still runs, taking turns with the caller.
    std::vector<int> cpus = AllowedCpus();
    REQUIRE(!cpus.empty());
    cpus.push_back(cpus.front());
    helper = std::make_unique<ForkJoin>(cpus);
  }
  return helper;
}

// Two pieces that each wait for the other to start (for up to 30 s): the
// caller cannot finish its piece alone, so the helper, if it is handed the
// work, takes the other at the same time. Each piece's thread and CPU, and
// whether both met.
struct Meeting {
  std::thread::id ids[2];
  int cpus[2] = {-1, -1};
  bool met[2] = {false, false};
};

Meeting RunMeeting(ForkJoin& helper) {
  Meeting m;
  std::atomic<int> started{0};
  helper.Run(2, [&](size_t piece) {
    m.ids[piece] = std::this_thread::get_id();
    m.cpus[piece] = sched_getcpu();
    started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    m.met[piece] = started.load() == 2;
  });
  return m;
}

TEST_CASE("ForkJoin runs a piece on its helper, on another CPU, while the caller runs one",
          "[shard][fork_join]") {
  std::unique_ptr<ForkJoin> helper = MakeHelper();
  const Meeting m = RunMeeting(*helper);
  CHECK(m.met[0]);
  CHECK(m.met[1]);
  CHECK(m.ids[0] != m.ids[1]);
  CHECK((m.ids[0] == std::this_thread::get_id() || m.ids[1] == std::this_thread::get_id()));
  if (AllowedCpus().size() >= 2) CHECK(m.cpus[0] != m.cpus[1]);
  CHECK(helper->helped() == 1);
}

TEST_CASE("ForkJoin leaves the helper idle while every CPU has a thread working on the data path",
          "[shard][fork_join]") {
  std::unique_ptr<ForkJoin> helper = MakeHelper();
  const size_t cpus = std::max<size_t>(AllowedCpus().size(), 2);  // MakeHelper's count
  // cpus - 1 other threads working, each until its release.
  std::atomic<size_t> ready{0};
  std::vector<std::unique_ptr<absl::Notification>> release;
  std::vector<std::thread> others;
  for (size_t i = 0; i + 1 < cpus; ++i) {
    release.push_back(std::make_unique<absl::Notification>());
    others.emplace_back([&, i] {
      const ForkJoin::Working working(helper.get());
      ready.fetch_add(1);
      release[i]->WaitForNotification();
    });
  }
  while (ready.load() + 1 < cpus) std::this_thread::yield();
  // This thread too, in two scopes (a pull answered within a push): it
  // counts once, so every CPU has one working thread, and every piece runs
  // on the caller.
  const ForkJoin::Working outer(helper.get());
  const ForkJoin::Working inner(helper.get());
  std::vector<std::thread::id> ran(8);
  helper->Run(ran.size(), [&](size_t piece) { ran[piece] = std::this_thread::get_id(); });
  for (const std::thread::id& id : ran) CHECK(id == std::this_thread::get_id());
  CHECK(helper->helped() == 0);

  // One thread fewer: a core is left, and the helper takes a piece again.
  // Were the nested scope counted twice, it would not.
  release.front()->Notify();
  others.front().join();
  const Meeting m = RunMeeting(*helper);
  CHECK(m.met[0]);
  CHECK(m.met[1]);
  CHECK(helper->helped() == 1);
  for (size_t i = 1; i < others.size(); ++i) {
    release[i]->Notify();
    others[i].join();
  }
  const ForkJoin::Working none(nullptr);  // a null helper's scope does nothing
}

TEST_CASE("ForkJoin runs every piece once when callers come at once", "[shard][fork_join]") {
  std::unique_ptr<ForkJoin> helper = MakeHelper();
  constexpr int kCallers = 4;
  constexpr int kRuns = 200;
  constexpr size_t kPieces = 5;
  std::vector<std::atomic<int>> counts(kCallers * kRuns * kPieces);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRuns; ++r) {
        helper->Run(kPieces, [&](size_t i) { counts[(c * kRuns + r) * kPieces + i].fetch_add(1); });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  int once = 0;
  for (auto& n : counts) once += n.load() == 1;
  CHECK(once == static_cast<int>(counts.size()));
  CHECK(helper->helped() <= static_cast<uint64_t>(kCallers * kRuns));
}

TEST_CASE("ForkJoin::ForRanges covers the work once, split only when large and helped",
          "[shard][fork_join]") {
  std::unique_ptr<ForkJoin> helper = MakeHelper();
  auto ranges = [](ForkJoin* h, size_t n, uint64_t bytes) {
    std::vector<std::pair<size_t, size_t>> got;
    absl::Mutex mu;
    ForkJoin::ForRanges(h, n, bytes, [&](size_t begin, size_t end) {
      absl::MutexLock lock(&mu);
      got.emplace_back(begin, end);
    });
    std::sort(got.begin(), got.end());
    return got;
  };
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  CHECK(ranges(helper.get(), 100, ForkJoin::kMinSplitBytes - 1) == Ranges{{0, 100}});
  CHECK(ranges(nullptr, 100, ForkJoin::kMinSplitBytes * 8) == Ranges{{0, 100}});
  CHECK(ranges(helper.get(), 1, ForkJoin::kMinSplitBytes * 8) == Ranges{{0, 1}});
  // 4 MiB in 1 MiB pieces, 10 units: 4 ranges, consecutive, covering [0, 10).
  const Ranges split = ranges(helper.get(), 10, ForkJoin::kMinSplitBytes);
  REQUIRE(split.size() == ForkJoin::kMinSplitBytes / ForkJoin::kPieceBytes);
  size_t at = 0;
  for (const auto& [begin, end] : split) {
    CHECK(begin == at);
    CHECK(end > begin);
    at = end;
  }
  CHECK(at == 10);
  // Never more pieces than units.
  CHECK(ranges(helper.get(), 3, ForkJoin::kMinSplitBytes * 8).size() == 3);
}

}  // namespace
}  // namespace cairn
