// TuneDaemonAllocator (common/daemon.h): the threads of a Cairn daemon
// allocate from one malloc arena, unless the operator set MALLOC_ARENA_MAX. Each test case runs in a process of its own (ctest), so
// no earlier test's threads made arenas.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "common/daemon.h"
#include "common/log.h"

namespace cairn {
namespace {

// The arenas glibc's malloc has made so far (malloc_info's <heap nr="N">).
int Arenas() {
  char* text = nullptr;
  size_t length = 0;
  FILE* out = open_memstream(&text, &length);
  REQUIRE(out != nullptr);
  REQUIRE(malloc_info(0, out) == 0);
  std::fclose(out);
  const std::string xml(text, length);
  std::free(text);
  int arenas = 0;
  for (size_t at = xml.find("<heap nr="); at != std::string::npos;
       at = xml.find("<heap nr=", at + 1)) {
    ++arenas;
  }
  return arenas;
}

// `threads` threads each hold a 1 MiB buffer at the same time, then free it:
// what a server's gRPC threads do with the messages they handle at once.
void AllocateAtOnce(int threads) {
  absl::BlockingCounter allocated(threads);
  absl::Notification done;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      void* buffer = std::malloc(1 << 20);
      std::memset(buffer, 1, 1 << 20);
      allocated.DecrementCount();
      done.WaitForNotification();
      std::free(buffer);
    });
  }
  allocated.Wait();
  done.Notify();
  for (std::thread& t : pool) t.join();
}

TEST_CASE("TuneDaemonAllocator keeps every thread's allocations in one arena",
          "[daemon]") {
  REQUIRE(std::getenv("MALLOC_ARENA_MAX") == nullptr);
  TuneDaemonAllocator();
  AllocateAtOnce(4);
  CHECK(Arenas() == 1);
}

TEST_CASE("TuneDaemonAllocator leaves malloc as it is when MALLOC_ARENA_MAX is set",
          "[daemon]") {
  // glibc read its settings at start, without it: its default stays.
  REQUIRE(setenv("MALLOC_ARENA_MAX", "8", 1) == 0);
  TuneDaemonAllocator();
  AllocateAtOnce(4);
  CHECK(Arenas() > 1);
}

TEST_CASE("ExitNow ends the process with its code while another thread logs",
          "[common][daemon]") {
  // A worker ends with ExitNow while its heartbeat thread may still log:
  // the loggers must outlive the call (they once were dropped first, and a
  // log in that moment dereferenced a null logger). Twenty children, each
  // ending mid-stream of log lines from a second thread.
  for (int i = 0; i < 20; ++i) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      cairn::InitLogging("exit-now-test", "info");
      std::freopen("/dev/null", "w", stderr);
      std::thread([] {
        for (;;) LOG_INFO("still running {}", std::string_view("a line"));
      }).detach();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      cairn::ExitNow(3);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    INFO("child " << i << ": status " << status);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
  }
}

}  // namespace
}  // namespace cairn
