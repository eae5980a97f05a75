// Helpers the fuzz targets share (docs/security.md, "Fuzzing").
#ifndef CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_
#define CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::fuzz {

// Turns logging off (ours and protobuf's) and absl's mutex deadlock
// detection off, as the daemons do: the production code logs every refused
// input, which would drown the fuzzer's output and slow it down.
// Idempotent; call at the top of each LLVMFuzzerTestOneInput.
void Quiet();

// Writes `size` bytes at `data` to a file of this process under $TMPDIR (or
// /tmp), named with the process id and `suffix`, replacing what it held,
// and returns its path: for loaders that read a path. Aborts when the file
// cannot be written (the harness is broken, not the code under test).
std::string WriteTempFile(const uint8_t* data, size_t size, const std::string& suffix);

// One part of a framed input.
struct Frame {
  uint8_t kind = 0;
  std::string_view bytes;
};

// Splits an input into frames, each [kind: 1 byte][length: 2 bytes,
// little-endian][length bytes]; a frame whose length runs past the end takes
// what is left. At most `max_frames` (the rest is ignored). Pure.
std::vector<Frame> SplitFrames(const uint8_t* data, size_t size, size_t max_frames);

// One frame in the layout SplitFrames reads (seed corpora); `bytes` at most
// 65535 bytes.
std::string EncodeFrame(uint8_t kind, std::string_view bytes);

// Stops the process with a message on stderr: an invariant of the code under
// test was broken, which libFuzzer reports as a crash with its input.
[[noreturn]] void Fail(const std::string& what);

}  // namespace cairn::fuzz

#endif  // CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_
