// The small shared modules of common/: the fixed hashes (hash.h), retry
// backoff (backoff.h), the background work queue (work_queue.h), child
// processes (spawn.h) and CPU affinity (cpu_affinity.h).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "common/backoff.h"
#include "common/cpu_affinity.h"
#include "common/hash.h"
#include "common/spawn.h"
#include "common/work_queue.h"

namespace cairn {
namespace {

TEST_CASE("SplitMix64 gives the reference splitmix64 outputs", "[hash]") {
  // splitmix64.c seeded with 0: each next() adds the golden gamma and mixes;
  // SplitMix64(x) is next() from state x.
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  STATIC_REQUIRE(SplitMix64(0) == 0xe220a8397b1dcdafULL);
  CHECK(SplitMix64(kGamma) == 0x6e789e6aa1b965f4ULL);
  CHECK(SplitMix64(2 * kGamma) == 0x06c45d188009454fULL);
}

TEST_CASE("Xxh64 is XXH64 with seed 0", "[hash]") {
  CHECK(Xxh64("") == 0xef46db3751d8e999ULL);  // the xxHash reference value
  const std::string abc = "abc";
  CHECK(Xxh64(abc) == Xxh64(abc.data(), abc.size()));
  CHECK(Xxh64("abc") != Xxh64("abd"));
}

TEST_CASE("Backoff doubles from its first wait up to its cap", "[backoff]") {
  constexpr Backoff b(absl::Milliseconds(50), absl::Seconds(1));
  CHECK(b.Delay(-1) == absl::Milliseconds(50));
  CHECK(b.Delay(0) == absl::Milliseconds(50));
  CHECK(b.Delay(1) == absl::Milliseconds(100));
  CHECK(b.Delay(4) == absl::Milliseconds(800));
  CHECK(b.Delay(5) == absl::Seconds(1));
  CHECK(b.Delay(1000000) == absl::Seconds(1));  // no overflow
}

TEST_CASE("WorkQueue hands items out in order, refuses beyond capacity and drains after Close",
          "[work_queue]") {
  WorkQueue<int> q(/*capacity=*/3);
  CHECK(q.Push(1));
  CHECK(q.Push(2));
  CHECK(q.Push(3));
  CHECK_FALSE(q.Push(4));  // full
  CHECK(q.size() == 3);
  CHECK(q.Pop() == 1);
  q.Close();
  CHECK(q.closed());
  CHECK_FALSE(q.Push(5));  // closed
  CHECK(q.Pop() == 2);     // what was queued is still handed out
  CHECK(q.Pop() == 3);
  CHECK_FALSE(q.Pop().has_value());
  CHECK_FALSE(q.PopFor(absl::Milliseconds(1)).has_value());
}

TEST_CASE("WorkQueue wakes a waiting consumer on Push and on Close", "[work_queue]") {
  WorkQueue<std::string> q;
  CHECK_FALSE(q.PopFor(absl::Milliseconds(20)).has_value());  // times out empty
  std::vector<std::string> got;
  std::thread consumer([&] {
    while (std::optional<std::string> s = q.Pop()) got.push_back(*s);
  });
  for (int i = 0; i < 100; ++i) REQUIRE(q.Push(std::to_string(i)));
  q.Close();
  consumer.join();
  REQUIRE(got.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(got[i] == std::to_string(i));

  WorkQueue<int> cleared;
  cleared.Push(1);
  cleared.Clear();
  CHECK(cleared.size() == 0);
}

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

TEST_CASE("SpawnChild runs a binary with its arguments and the given stdout", "[spawn]") {
  std::string dir = TempPath("spawn-test.XXXXXX");
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  const std::string out_path = dir + "/out";
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(out >= 0);
  absl::StatusOr<pid_t> pid = SpawnChild("/bin/sh", {"-c", "echo \"$0 $1\"", "one", "two"},
                                         {-1, out, -1});
  close(out);
  REQUIRE(pid.ok());
  const int status = WaitFor(*pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(ReadFile(out_path) == "one two\n");

  // stdin is /dev/null when none is given: cat ends at once.
  pid = SpawnChild("/bin/cat", {}, {});
  REQUIRE(pid.ok());
  CHECK(WEXITSTATUS(WaitFor(*pid)) == 0);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("SpawnChild names a binary it cannot execute, with the code of why", "[spawn]") {
  absl::StatusOr<pid_t> pid = SpawnChild("/nonexistent/cairn-server", {}, {});
  REQUIRE(absl::IsNotFound(pid.status()));
  CHECK_THAT(std::string(pid.status().message()),
             Catch::StartsWith("cannot execute /nonexistent/cairn-server: "));

  std::string path = TempPath("spawn-test-noexec.XXXXXX");
  const int fd = mkstemp(path.data());
  REQUIRE(fd >= 0);
  close(fd);
  chmod(path.c_str(), 0644);
  pid = SpawnChild(path, {}, {});
  unlink(path.c_str());
  REQUIRE(absl::IsPermissionDenied(pid.status()));  // no x bit: EACCES, for root too
}

TEST_CASE("A CPU list is written as the kernel writes it", "[cpu_affinity]") {
  CHECK(FormatCpuList({}) == "");
  CHECK(FormatCpuList({3}) == "3");
  CHECK(FormatCpuList({0, 1}) == "0-1");
  CHECK(FormatCpuList({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
}

TEST_CASE("SpawnChild runs a child on the CPUs it is given", "[spawn][cpu_affinity]") {
  const std::vector<int> allowed = AllowedCpus();
  REQUIRE_FALSE(allowed.empty());
  std::string dir = TempPath("spawn-cpus.XXXXXX");
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  const std::string out_path = dir + "/out";
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(out >= 0);
  // The kernel's own record of the child's affinity.
  const std::vector<int> last = {allowed.back()};
  absl::StatusOr<pid_t> pid =
      SpawnChild("/bin/sh", {"-c", "grep Cpus_allowed_list /proc/self/status"}, {-1, out, -1},
                 last);
  close(out);
  REQUIRE(pid.ok());
  CHECK(WEXITSTATUS(WaitFor(*pid)) == 0);
  CHECK(ReadFile(out_path) == "Cpus_allowed_list:\t" + FormatCpuList(last) + "\n");
  std::system(("rm -rf " + dir).c_str());

  // A CPU the child may not use (beyond every CPU of this machine) is refused
  // with its list named, and the child reaped.
  pid = SpawnChild("/bin/true", {}, {}, {CPU_SETSIZE - 1});
  REQUIRE(absl::IsInvalidArgument(pid.status()));
  CHECK_THAT(std::string(pid.status().message()),
             Catch::StartsWith("cannot start /bin/true on CPUs " +
                               std::to_string(CPU_SETSIZE - 1) + ": "));
  pid = SpawnChild("/bin/true", {}, {}, {-1});
  CHECK(absl::IsInvalidArgument(pid.status()));
}

}  // namespace
}  // namespace cairn
