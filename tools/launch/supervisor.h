// The processes of one job run by cairn-launch: starts them, forwards their
// output with a "[<name>] " prefix (log_mux.h), notices when one ends or the
// launcher is asked to stop, and stops them all.
//
// Signals: Create() blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling
// thread and reads them from a signalfd, so a Ctrl-C is seen between two
// polls rather than in a handler; SIGPIPE is ignored (a closed terminal must
// not kill the launcher before it stops its children). Children start with
// no blocked signals.
//
// Failure rule: the coordinator and the servers must run until the launcher
// stops them, so their ending at all (exit code 0 included) is a failure; a
// worker fails when it ends other than with exit code 0, and that fails the
// job unless worker failures are tolerated (set_worker_failures_tolerated:
// the job's `cluster.on_worker_loss: continue`), in which case it is logged
// and the job goes on while one worker still runs or finished. A Prometheus server
// started with --prometheus only watches the job: its ending is logged, and
// the job goes on without it.
//
// Output goes through a Console (console.h): on a terminal, one live status
// line (SetStatus) stays below the log lines.
//
// Not thread-safe; confined to the launcher's main thread (which must also
// be the thread that lives longest, see child_process.h).
#ifndef CAIRN_TOOLS_LAUNCH_SUPERVISOR_H_
#define CAIRN_TOOLS_LAUNCH_SUPERVISOR_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/launch/child_process.h"
#include "tools/launch/console.h"
#include "tools/launch/log_mux.h"

namespace cairn::launch {

enum class Role { kCoordinator, kServer, kWorker, kPrometheus };

// One started process.
struct Member {
  Role role = Role::kWorker;
  int index = 0;                          // server or worker index; 0 for the coordinator
  std::string name;                       // "coordinator", "server 0", "worker 1", "prometheus"
  std::unique_ptr<ChildProcess> process;
  std::optional<ExitStatus> exit;         // set once it ended and was reaped
};

// Why RunUntil returned.
struct Event {
  enum class Kind { kReady, kSignal, kFailed, kTimeout };
  Kind kind = Kind::kReady;
  int signal = 0;            // kSignal: SIGINT, SIGTERM or SIGHUP
  std::string failed;        // kFailed: the member's name
  ExitStatus status;         // kFailed: how it ended
};

class Supervisor {
 public:
  // Blocks the signals (see above) and opens the signalfd. `log_fd` (not
  // owned) receives the launcher's own "[launch] ..." lines and the
  // children's stderr; children's stdout goes to the launcher's stdout.
  // `live_status`: draw SetStatus's line on `log_fd` (a terminal; see
  // Console::IsLiveTerminal). Internal when the signalfd cannot be created.
  static absl::StatusOr<std::unique_ptr<Supervisor>> Create(int log_fd, bool live_status = false);

  // SIGKILLs and reaps whatever still runs; restores the signal mask.
  ~Supervisor();

  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts `binary` with `args` as `role` number `index` and logs
  // "[launch] started <name> pid=<pid>" (tests and operators rely on this
  // line to find every process). `stderr_observer` sees each stderr line
  // first and may drop it (LogMux::LineObserver). With `cpus`, the member
  // runs on those CPUs only (ChildProcess::Spawn).
  // Errors from ChildProcess::Spawn, naming the binary.
  absl::Status Start(Role role, int index, const std::string& binary,
                     const std::vector<std::string>& args,
                     LogMux::LineObserver stderr_observer = nullptr,
                     const std::vector<int>& cpus = {});

  // Forwards output and watches the members until `ready()` returns true
  // (checked at least every 100 ms), a termination signal arrives, a member
  // fails (see the failure rule), or `deadline` passes, whichever comes
  // first; a failure is reported after the failed member's last output lines.
  // A termination signal wins over a failure seen in the same round (a
  // terminal's Ctrl-C reaches the children too, and they may end first).
  Event RunUntil(const std::function<bool()>& ready, absl::Time deadline);

  // True when every started worker has ended, however (and at least one was
  // started).
  bool AllWorkersEnded() const;
  // Every coordinator and server process has ended.
  bool AllDaemonsEnded() const;

  // The indices of the workers that ended other than with exit code 0, in
  // start order.
  std::vector<int> FailedWorkers() const;

  // With `tolerated`, a worker that fails while training (killed by a
  // signal, or exit code 1 or 5) does not end RunUntil: it is logged
  // ("worker N failed (...); the job goes on without it") and the job goes
  // on, unless no worker is left running or finished. A worker that could
  // not start (exit code 2, 3 or 4: configuration, port, coordinator or
  // start-up barrier) still fails the job at once: the barrier waits for
  // every worker, and the others share its configuration. Off by default.
  void set_worker_failures_tolerated(bool tolerated) { worker_failures_tolerated_ = tolerated; }

  // Stops every member still running: SIGTERM to all but the coordinator,
  // then (once they ended) to the coordinator, so servers can still report
  // their last checkpoint; SIGKILL to those still running after `grace` (at
  // once when another termination signal arrives meanwhile). Reaps all and forwards their remaining output.
  // Returns the names of members that had to be SIGKILLed. With
  // `keep_prometheus`, a Prometheus member is left running (--prometheus-keep).
  std::vector<std::string> StopAll(absl::Duration grace, bool keep_prometheus = false);

  // Writes "[launch] <message>" to the log fd.
  void Log(absl::string_view message);

  // Writes `line` to stdout as it is (the closing report), below the log.
  void Print(absl::string_view line);

  // The live status line (see console.h); SetStatus does nothing unless
  // Create was given live_status.
  void SetStatus(absl::string_view text) { console_.SetStatus(text); }
  void ClearStatus() { console_.ClearStatus(); }
  bool live_status() const { return console_.live(); }

  const std::vector<Member>& members() const { return members_; }

 private:
  Supervisor(int log_fd, int signal_fd, bool live_status)
      : log_fd_(log_fd), signal_fd_(signal_fd), console_(log_fd, live_status) {
    mux_.SetConsole(&console_);
  }

  // Reads pending signals; remembers the last termination signal.
  void ReadSignals();
  // Reaps the members that ended since the last call and forwards their
  // last output; returns them (pointers into members_).
  std::vector<const Member*> ReapEnded();
  // True while a worker still runs or has finished with exit code 0.
  bool AnyWorkerLeft() const;
  // Whether a worker that ended so had started training (see
  // set_worker_failures_tolerated).
  static bool FailedWhileTraining(const ExitStatus& exit);

  const int log_fd_;
  const int signal_fd_;
  Console console_;
  LogMux mux_;
  std::vector<Member> members_;
  int pending_signal_ = 0;  // a termination signal not yet reported
  bool worker_failures_tolerated_ = false;
};

// "coordinator", "server <index>", "worker <index>" or "prometheus".
std::string MemberName(Role role, int index);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_SUPERVISOR_H_
