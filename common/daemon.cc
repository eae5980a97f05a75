#include "common/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"

namespace cairn {

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void TuneAllocator() {
  mallopt(M_MMAP_THRESHOLD, 512 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void TuneDaemonAllocator() {
  TuneAllocator();
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  mallopt(M_ARENA_MAX, 1);
}

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

int WaitForTermination(const std::atomic<bool>* stop) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  while (stop == nullptr || !stop->load()) {
    timespec timeout{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig > 0) return sig;
  }
  return 0;
}

StopWhileWaiting::StopWhileWaiting(std::string while_doing)
    : watcher_([this, what = std::move(while_doing)] {
        if (const int sig = WaitForTermination(&over_); sig != 0) {
          LOG_INFO("received {} {}; stopping", strsignal(sig), what);
          ExitNow(kExitOk);
        }
      }) {}

StopWhileWaiting::~StopWhileWaiting() {
  over_.store(true);
  watcher_.join();
}

void ExitNow(int code) {
  // Flushed, not shut down: spdlog::shutdown drops the default logger, and
  // a thread still running (a heartbeat, a watch of the map) that logs in
  // the moment before _Exit dereferenced the null logger (a worker ending a
  // job under load crashed so, after its summary was written).
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) { logger->flush(); });
  std::fflush(nullptr);
  std::_Exit(code);
}

absl::Status WritePortFile(const std::string& path, int grpc_port, int metrics_port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write port file ", tmp));
    out << "grpc=" << grpc_port << "\nmetrics=" << metrics_port << "\n";
    if (!out.flush()) return absl::UnavailableError(absl::StrCat("cannot write port file ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace cairn
