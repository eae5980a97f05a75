#include "tools/launch/supervisor.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/strings/str_join.h"

namespace cairn::launch {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, sig);
  return set;
}

}  // namespace

std::string MemberName(Role role, int index) {
  switch (role) {
    case Role::kCoordinator:
      return "coordinator";
    case Role::kServer:
      return absl::StrCat("server ", index);
    case Role::kWorker:
      return absl::StrCat("worker ", index);
    case Role::kPrometheus:
      return "prometheus";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Supervisor>> Supervisor::Create(int log_fd, bool live_status) {
  const sigset_t set = HandledSignals();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  const int signal_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create a signalfd: ", std::strerror(errno)));
  }
  return std::unique_ptr<Supervisor>(new Supervisor(log_fd, signal_fd, live_status));
}

Supervisor::~Supervisor() {
  console_.ClearStatus();
  members_.clear();  // ChildProcess's destructor SIGKILLs and reaps
  ::close(signal_fd_);
  const sigset_t set = HandledSignals();
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void Supervisor::Log(absl::string_view message) {
  console_.WriteLine(log_fd_, absl::StrCat("[launch] ", message));
}

void Supervisor::Print(absl::string_view line) { console_.WriteLine(STDOUT_FILENO, line); }

absl::Status Supervisor::Start(Role role, int index, const std::string& binary,
                               const std::vector<std::string>& args,
                               LogMux::LineObserver stderr_observer,
                               const std::vector<int>& cpus) {
  Member member;
  member.role = role;
  member.index = index;
  member.name = MemberName(role, index);
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(member.name, binary, args, cpus);
  if (!child.ok()) return child.status();
  member.process = *std::move(child);
  const std::string prefix = absl::StrCat("[", member.name, "] ");
  mux_.Add(member.process->ReleaseStdoutFd(), prefix, STDOUT_FILENO);
  mux_.Add(member.process->ReleaseStderrFd(), prefix, log_fd_, std::move(stderr_observer));
  Log(absl::StrCat("started ", member.name, " pid=", member.process->pid(), ": ", binary, " ",
                   absl::StrJoin(args, " ")));
  members_.push_back(std::move(member));
  return absl::OkStatus();
}

void Supervisor::ReadSignals() {
  signalfd_siginfo info;
  while (true) {
    const ssize_t n = ::read(signal_fd_, &info, sizeof(info));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(info))) return;  // EAGAIN: nothing more
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD) pending_signal_ = sig;  // SIGCHLD only wakes the loop
  }
}

std::vector<const Member*> Supervisor::ReapEnded() {
  std::vector<const Member*> ended;
  for (Member& member : members_) {
    if (member.exit.has_value()) continue;
    member.exit = member.process->Poll();
    if (member.exit.has_value()) ended.push_back(&member);
  }
  if (!ended.empty()) mux_.FlushAvailable();  // their last lines come before our verdict
  return ended;
}

Event Supervisor::RunUntil(const std::function<bool()>& ready, absl::Time deadline) {
  while (true) {
    std::optional<Event> failure;
    for (const Member* m : ReapEnded()) {
      if (m->role == Role::kPrometheus) {
        Log(absl::StrCat(m->name, " ended (", m->exit->ToString(), ")"));
        continue;
      }
      // A server or the coordinator exits 0 by itself once the job is over
      // (cluster.exit_when_done); a worker exiting 0 has finished.
      const bool ok = m->exit->success();
      if (ok) {
        Log(absl::StrCat(m->name, m->role == Role::kWorker ? " finished (" : " stopped (",
                         m->exit->ToString(), ")"));
      }
      if (!ok && m->role == Role::kWorker && worker_failures_tolerated_ && AnyWorkerLeft() &&
          FailedWhileTraining(*m->exit)) {
        Log(absl::StrCat(m->name, " failed (", m->exit->ToString(),
                         "); the job goes on without it (cluster.on_worker_loss: continue)"));
        continue;
      }
      if (!ok && !failure.has_value()) {
        failure = Event{Event::Kind::kFailed, 0, m->name, *m->exit};
      }
    }
    // A Ctrl-C on the terminal reaches the children too; read our own signal
    // after reaping, so a child that ended because of it is not the verdict.
    ReadSignals();
    if (pending_signal_ != 0) {
      Event event{Event::Kind::kSignal, pending_signal_};
      pending_signal_ = 0;
      return event;
    }
    if (failure.has_value()) return *failure;
    if (ready()) return Event{Event::Kind::kReady};
    const absl::Time now = absl::Now();
    if (now >= deadline) return Event{Event::Kind::kTimeout};
    if (mux_.Pump(std::min(kPollInterval, deadline - now), signal_fd_)) ReadSignals();
  }
}

bool Supervisor::AllWorkersEnded() const {
  bool any = false;
  for (const Member& m : members_) {
    if (m.role != Role::kWorker) continue;
    any = true;
    if (!m.exit.has_value()) return false;
  }
  return any;
}

bool Supervisor::AllDaemonsEnded() const {
  return std::all_of(members_.begin(), members_.end(), [](const Member& m) {
    return m.exit.has_value() || m.role == Role::kWorker || m.role == Role::kPrometheus;
  });
}

bool Supervisor::FailedWhileTraining(const ExitStatus& exit) {
  // cairn-worker's exit codes: 2 bad flags or configuration, 3 a port is
  // taken, 4 the coordinator is unreachable or the start-up barrier timed
  // out: it never trained, and the barrier waits for every worker.
  return exit.signal != 0 || (exit.code != 2 && exit.code != 3 && exit.code != 4);
}

bool Supervisor::AnyWorkerLeft() const {
  return std::any_of(members_.begin(), members_.end(), [](const Member& m) {
    return m.role == Role::kWorker && (!m.exit.has_value() || m.exit->success());
  });
}

std::vector<int> Supervisor::FailedWorkers() const {
  std::vector<int> failed;
  for (const Member& m : members_) {
    if (m.role == Role::kWorker && m.exit.has_value() && !m.exit->success()) {
      failed.push_back(m.index);
    }
  }
  return failed;
}

std::vector<std::string> Supervisor::StopAll(absl::Duration grace, bool keep_prometheus) {
  ReapEnded();
  const absl::Time deadline = absl::Now() + grace;
  pending_signal_ = 0;
  auto kept = [keep_prometheus](const Member& m) {
    return keep_prometheus && m.role == Role::kPrometheus;
  };
  // The coordinator last: servers finishing their last checkpoint still
  // report it to the coordinator while they stop.
  for (const bool coordinator : {false, true}) {
    for (Member& m : members_) {
      if (m.exit.has_value() || kept(m) || (m.role == Role::kCoordinator) != coordinator) {
        continue;
      }
      if (absl::Status s = m.process->Signal(SIGTERM); !s.ok()) Log(s.message());
    }
    auto wave_ended = [this, coordinator, &kept] {
      return std::all_of(members_.begin(), members_.end(), [coordinator, &kept](const Member& m) {
        return m.exit.has_value() || kept(m) || (m.role == Role::kCoordinator) != coordinator;
      });
    };
    while (!wave_ended() && absl::Now() < deadline && pending_signal_ == 0) {
      if (mux_.Pump(std::min(kPollInterval, deadline - absl::Now()), signal_fd_)) ReadSignals();
      ReapEnded();
    }
  }
  std::vector<std::string> killed;
  for (Member& m : members_) {
    if (m.exit.has_value() || kept(m)) continue;
    m.exit = m.process->Kill();
    killed.push_back(m.name);
  }
  pending_signal_ = 0;
  mux_.Drain(absl::Seconds(1));
  return killed;
}

}  // namespace cairn::launch
