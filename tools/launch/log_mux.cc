#include "tools/launch/log_mux.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/launch/console.h"

namespace cairn::launch {
namespace {

constexpr size_t kReadChunkBytes = 16 * 1024;

int TimeoutMs(absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(timeout) + 1, 1 << 30));
}

}  // namespace

void WriteLine(int fd, absl::string_view text) {
  const std::string line = absl::StrCat(text, "\n");
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // best effort: a closed terminal must not stop the launcher
    done += static_cast<size_t>(n);
  }
}

LogMux::~LogMux() {
  for (Stream& stream : streams_) ::close(stream.fd);
}

void LogMux::Add(int fd, std::string prefix, int target_fd, LineObserver observer) {
  if (fd < 0) return;
  streams_.push_back(Stream{fd, std::move(prefix), target_fd, std::move(observer), ""});
}

void LogMux::Emit(const Stream& stream, absl::string_view line) {
  if (stream.observer && !stream.observer(line)) return;
  const std::string text = absl::StrCat(stream.prefix, line);
  if (console_ != nullptr) {
    console_->WriteLine(stream.target_fd, text);
  } else {
    WriteLine(stream.target_fd, text);
  }
}

bool LogMux::ReadAvailable(Stream& stream) {
  char buffer[kReadChunkBytes];
  while (true) {
    const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {  // end of file, or an error that ends the stream all the same
      if (!stream.partial.empty()) Emit(stream, stream.partial);
      stream.partial.clear();
      return false;
    }
    stream.partial.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      const size_t newline = stream.partial.find('\n', start);
      if (newline == std::string::npos) break;
      Emit(stream, absl::string_view(stream.partial).substr(start, newline - start));
      start = newline + 1;
    }
    stream.partial.erase(0, start);
    while (stream.partial.size() >= kMaxLineBytes) {
      Emit(stream, absl::string_view(stream.partial).substr(0, kMaxLineBytes));
      stream.partial.erase(0, kMaxLineBytes);
    }
  }
}

void LogMux::CloseStream(size_t index) {
  ::close(streams_[index].fd);
  streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(index));
}

bool LogMux::Pump(absl::Duration timeout, int wake_fd) {
  std::vector<pollfd> fds;
  fds.reserve(streams_.size() + 1);
  for (const Stream& stream : streams_) fds.push_back(pollfd{stream.fd, POLLIN, 0});
  if (wake_fd >= 0) fds.push_back(pollfd{wake_fd, POLLIN, 0});
  if (fds.empty()) {
    ::usleep(static_cast<useconds_t>(TimeoutMs(timeout)) * 1000);
    return false;
  }
  int ready;
  do {
    ready = ::poll(fds.data(), fds.size(), TimeoutMs(timeout));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return false;

  bool woken = false;
  if (wake_fd >= 0) woken = (fds.back().revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  // Walk backwards so closing a stream keeps the remaining indices valid.
  for (size_t i = streams_.size(); i-- > 0;) {
    if (fds[i].revents == 0) continue;
    if (!ReadAvailable(streams_[i])) CloseStream(i);
  }
  return woken;
}

void LogMux::FlushAvailable() {
  constexpr int kMaxRounds = 8;  // bounded: a chatty child must not hold us here
  for (int round = 0; round < kMaxRounds && !streams_.empty(); ++round) {
    std::vector<pollfd> fds;
    for (const Stream& stream : streams_) fds.push_back(pollfd{stream.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 0) <= 0) return;
    for (size_t i = streams_.size(); i-- > 0;) {
      if (fds[i].revents != 0 && !ReadAvailable(streams_[i])) CloseStream(i);
    }
  }
}

void LogMux::Drain(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!streams_.empty() && absl::Now() < deadline) Pump(deadline - absl::Now());
  for (size_t i = streams_.size(); i-- > 0;) {
    ReadAvailable(streams_[i]);  // whatever arrived last
    if (!streams_[i].partial.empty()) Emit(streams_[i], streams_[i].partial);
    CloseStream(i);
  }
}

}  // namespace cairn::launch
