// Merges the output of several child processes into the launcher's stdout
// and stderr, one whole line at a time, each line prefixed with the child's
// name ("[server 0] ", "[worker 1] "):
//
//   LogMux mux;
//   mux.Add(child->ReleaseStderrFd(), "[server 0] ", STDERR_FILENO);
//   while (...) mux.Pump(absl::Milliseconds(200), signal_fd);
//   mux.Drain(absl::Seconds(1));
//
// Lines are written with one write() each, so lines of different children
// never interleave mid-line. A line longer than kMaxLineBytes is cut there;
// an unterminated last line is written when its stream ends.
//
// With a Console (console.h) set, lines go through it, so a live status
// line on the terminal stays below them.
//
// Not thread-safe; confined to the launcher's main thread.
#ifndef CAIRN_TOOLS_LAUNCH_LOG_MUX_H_
#define CAIRN_TOOLS_LAUNCH_LOG_MUX_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cairn::launch {

class Console;

// Writes `text` followed by '\n' to `fd` in one write() where the kernel
// allows (retrying on partial writes and EINTR). Errors are ignored: output
// is best effort and must not stop the launcher.
void WriteLine(int fd, absl::string_view text);

class LogMux {
 public:
  // Longest line kept in one piece, in bytes.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  LogMux() = default;
  // Closes every stream still open.
  ~LogMux();

  LogMux(const LogMux&) = delete;
  LogMux& operator=(const LogMux&) = delete;

  // Called with each line of a stream (without prefix or '\n') before it is
  // written out; returns false to drop the line (it is not written). Runs
  // on the thread that calls Pump/Drain.
  using LineObserver = std::function<bool(absl::string_view line)>;

  // Writes every line through `console` (not owned; must outlive the mux)
  // from now on; null: straight to the target fds.
  void SetConsole(Console* console) { console_ = console; }

  // Reads lines from `fd` (takes ownership; it should be non-blocking) and
  // writes them, after `prefix`, to `target_fd` (not owned; typically
  // STDOUT_FILENO or STDERR_FILENO); `observer`, when set, sees each line
  // too. fd < 0 is ignored.
  void Add(int fd, std::string prefix, int target_fd, LineObserver observer = nullptr);

  // Waits up to `timeout` until a stream has data or `wake_fd` (when >= 0;
  // not read here) is readable, then forwards every complete line available
  // without blocking. Streams at end of file are flushed and closed.
  // Returns true when `wake_fd` is readable.
  bool Pump(absl::Duration timeout, int wake_fd = -1);

  // Forwards whatever the streams hold now, without waiting (a few rounds at
  // most), e.g. the last lines of a child that has just exited.
  void FlushAvailable();

  // Forwards output until every stream has ended or `timeout` has passed,
  // then flushes partial lines and closes what is left. Use after the
  // children have exited, so their last lines are not lost.
  void Drain(absl::Duration timeout);

  // Streams not yet at end of file.
  size_t open_streams() const { return streams_.size(); }

 private:
  struct Stream {
    int fd = -1;
    std::string prefix;
    int target_fd = -1;
    LineObserver observer;
    std::string partial;  // bytes after the last '\n' seen
  };

  // Reads what `stream` has now and forwards complete lines. Returns false at
  // end of file or on a read error (the partial line is flushed then).
  bool ReadAvailable(Stream& stream);
  void Emit(const Stream& stream, absl::string_view line);
  void CloseStream(size_t index);

  std::vector<Stream> streams_;
  Console* console_ = nullptr;
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_LOG_MUX_H_
