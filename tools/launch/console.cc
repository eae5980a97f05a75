#include "tools/launch/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/launch/log_mux.h"

namespace cairn::launch {
namespace {

constexpr int kDefaultWidth = 80;
constexpr char kEraseLine[] = "\r\033[K";  // to column 0, clear to the end of the line

// Writes all of `bytes` to `fd`; best effort, as WriteLine.
void WriteAll(int fd, absl::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

Console::Console(int status_fd, bool live) : status_fd_(status_fd), live_(live) {}

bool Console::IsLiveTerminal(int fd) {
  if (::isatty(fd) != 1) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

int Console::TerminalWidth(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  int columns = 0;
  const char* env = std::getenv("COLUMNS");
  if (env != nullptr && absl::SimpleAtoi(env, &columns) && columns > 0) return columns;
  return kDefaultWidth;
}

void Console::WriteLine(int fd, absl::string_view text) {
  const bool redraw = shown_ && (fd == status_fd_ || ::isatty(fd) == 1);
  if (redraw) Erase();
  launch::WriteLine(fd, text);
  if (redraw) Draw();
}

void Console::SetStatus(absl::string_view text) {
  if (!live_) return;
  status_ = std::string(text.substr(0, text.find('\n')));
  Draw();
}

void Console::ClearStatus() {
  if (shown_) Erase();
  status_.clear();
}

void Console::Erase() {
  WriteAll(status_fd_, kEraseLine);
  shown_ = false;
}

void Console::Draw() {
  if (!live_ || status_.empty()) return;
  // One column spare: writing the last column makes some terminals wrap.
  const size_t width = static_cast<size_t>(TerminalWidth(status_fd_) - 1);
  WriteAll(status_fd_, absl::StrCat(kEraseLine, absl::string_view(status_).substr(0, width)));
  shown_ = true;
}

}  // namespace cairn::launch
