// A shared-memory region between a worker and a server on the same host
// (docs/shared-memory.md): an anonymous memory file (memfd) the worker
// creates, sizes and seals against shrinking and growing, and the server
// opens through /proc/<pid>/fd/<fd> and maps. Values of pushes and pulls
// travel through it; gRPC carries the rest of each request.
//
// The seals are what make the server's side safe: a region that cannot
// shrink cannot turn the server's reads into SIGBUS, whatever the worker
// does. The first 16 bytes hold a random token the worker also sends in
// its OpenRegion request, so a server maps only the region the worker meant
// (and a server on another host, where the pid names another process or
// none, refuses).
#ifndef CAIRN_COMMON_SHARED_REGION_H_
#define CAIRN_COMMON_SHARED_REGION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace cairn {

// Thread-compatible; data() may be read and written from any thread (the
// callers order their accesses: a request's bytes are written before it is
// sent, a reply's read after it arrived).
class SharedRegion {
 public:
  // Bytes at the start that hold the token; ranges start at or after it.
  static constexpr size_t kHeaderBytes = 64;
  static constexpr size_t kTokenBytes = 16;

  // A new sealed memfd of `bytes` (> kHeaderBytes), mapped read-write, its
  // token random. Errors: INVALID_ARGUMENT for a size too small;
  // UNAVAILABLE naming the call that failed (memfd_create, ftruncate,
  // fcntl, mmap), e.g. where the kernel lacks memfd or sealing.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Create(size_t bytes);

  // Maps the region another process of this host created: `fd` in process
  // `pid`, of `bytes`, whose first bytes are `token`. FAILED_PRECONDITION,
  // naming what did not match, when the descriptor cannot be opened (no
  // such process here, or no permission), is not a sealed memfd of that
  // size, or holds another token.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Open(int pid, int fd, size_t bytes,
                                                            const std::string& token);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }  // the creator's descriptor; -1 for an opened region
  const std::string& token() const { return token_; }

  // [offset, offset + length) of the region, or OUT_OF_RANGE naming the
  // range and the region's size when it does not lie within it (the
  // header included: offsets below kHeaderBytes are refused).
  absl::StatusOr<absl::Span<char>> Range(uint64_t offset, uint64_t length) const;

 private:
  SharedRegion(char* data, size_t size, int fd, std::string token)
      : data_(data), size_(size), fd_(fd), token_(std::move(token)) {}

  char* const data_;
  const size_t size_;
  const int fd_;
  const std::string token_;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_SHARED_REGION_H_
