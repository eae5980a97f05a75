#include "tests/fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include "absl/synchronization/mutex.h"

namespace cairn::fuzz {

void Quiet() {
  static const bool done = [] {
    spdlog::set_level(spdlog::level::off);
    // Parsing a string field with bytes that are not UTF-8 fails the parse,
    // as it should, and protobuf logs each one.
    google::protobuf::SetLogHandler(nullptr);
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    return true;
  }();
  (void)done;
}

std::string WriteTempFile(const uint8_t* data, size_t size, const std::string& suffix) {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  }();
  const std::string path =
      dir + "/cairn-fuzz-" + std::to_string(getpid()) + "-" + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) Fail("cannot write " + path);
  return path;
}

std::vector<Frame> SplitFrames(const uint8_t* data, size_t size, size_t max_frames) {
  std::vector<Frame> frames;
  size_t at = 0;
  while (at < size && frames.size() < max_frames) {
    Frame f;
    f.kind = data[at++];
    size_t length = 0;
    if (at < size) length = data[at++];
    if (at < size) length |= static_cast<size_t>(data[at++]) << 8;
    if (length > size - at) length = size - at;
    f.bytes = std::string_view(reinterpret_cast<const char*>(data) + at, length);
    at += length;
    frames.push_back(f);
  }
  return frames;
}

std::string EncodeFrame(uint8_t kind, std::string_view bytes) {
  if (bytes.size() > 0xffff) Fail("frame of " + std::to_string(bytes.size()) + " bytes");
  std::string out;
  out.push_back(static_cast<char>(kind));
  out.push_back(static_cast<char>(bytes.size() & 0xff));
  out.push_back(static_cast<char>(bytes.size() >> 8));
  out.append(bytes);
  return out;
}

void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace cairn::fuzz
