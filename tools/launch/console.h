// The launcher's console: every line it prints (its own and its children's)
// goes through here, so that on a terminal one live status line (the
// combined training progress) stays at the bottom, below the log lines:
//
//   [worker 0] 2026-01-05 10:00:01.234 worker I epoch 1/2 steps 468 ...
//   [launch] all workers finished; stopping the servers and the coordinator
//   2 workers epoch 2/3 [=========>       ]  61% 572/936 9876.5 ex/s loss 0.4321 ETA 12s
//
// A live console erases the status line ("\r" and ESC[K) before each log
// line written to a terminal and draws it again after; a plain console (not
// a terminal, e.g. CI or a file) never draws it and writes lines unchanged.
//
// Not thread-safe; confined to the launcher's main thread.
#ifndef CAIRN_TOOLS_LAUNCH_CONSOLE_H_
#define CAIRN_TOOLS_LAUNCH_CONSOLE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace cairn::launch {

class Console {
 public:
  // `status_fd` (not owned): where the status line is drawn, normally
  // STDERR_FILENO. `live`: whether to draw it at all; see IsLiveTerminal.
  Console(int status_fd, bool live);

  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // True when `fd` is a terminal and $TERM is not "dumb".
  static bool IsLiveTerminal(int fd);

  // The terminal's width in columns (TIOCGWINSZ on `fd`, else $COLUMNS,
  // else 80).
  static int TerminalWidth(int fd);

  bool live() const { return live_; }

  // Writes `text` and '\n' to `fd` in one write() (see log_mux.h
  // WriteLine). On a live console with the status line shown and `fd` a
  // terminal, erases the status line first and draws it again after.
  void WriteLine(int fd, absl::string_view text);

  // Replaces the status line's text (one line, no '\n'; cut to the terminal
  // width) and draws it. Does nothing on a plain console.
  void SetStatus(absl::string_view text);

  // Erases the status line and forgets its text (later lines go below the
  // log as usual).
  void ClearStatus();

 private:
  void Erase();
  void Draw();

  const int status_fd_;
  const bool live_;
  std::string status_;  // empty: none
  bool shown_ = false;  // the status line is on screen now
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_CONSOLE_H_
