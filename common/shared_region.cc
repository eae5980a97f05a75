#include "common/shared_region.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

absl::Status Errno(absl::StatusCode code, const std::string& what) {
  return absl::Status(code, absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::StatusOr<char*> Map(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Errno(absl::StatusCode::kUnavailable, "mmap of the shared region");
  return static_cast<char*>(p);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Create(size_t bytes) {
  if (bytes <= kHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared region of ", bytes, " bytes: at least ", kHeaderBytes + 1, " needed"));
  }
  std::string token(kTokenBytes, '\0');
  if (getrandom(token.data(), token.size(), 0) != static_cast<ssize_t>(token.size())) {
    return Errno(absl::StatusCode::kUnavailable, "getrandom for the shared region's token");
  }
  const int fd = memfd_create("cairn-values", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno(absl::StatusCode::kUnavailable, "memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = Errno(absl::StatusCode::kUnavailable, "ftruncate of the shared region");
    close(fd);
    return s;
  }
  if (fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    absl::Status s = Errno(absl::StatusCode::kUnavailable, "fcntl(F_ADD_SEALS)");
    close(fd);
    return s;
  }
  absl::StatusOr<char*> data = Map(fd, bytes);
  if (!data.ok()) {
    close(fd);
    return data.status();
  }
  std::memcpy(*data, token.data(), token.size());
  return std::unique_ptr<SharedRegion>(new SharedRegion(*data, bytes, fd, std::move(token)));
}

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Open(int pid, int fd, size_t bytes,
                                                                 const std::string& token) {
  if (token.size() != kTokenBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared region token of ", token.size(), " bytes, not ", kTokenBytes));
  }
  if (bytes <= kHeaderBytes) {
    return absl::FailedPreconditionError(absl::StrCat("shared region of ", bytes, " bytes"));
  }
  const std::string path = absl::StrCat("/proc/", pid, "/fd/", fd);
  const int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) {
    return Errno(absl::StatusCode::kFailedPrecondition,
                 absl::StrCat("cannot open the worker's shared region ", path,
                              " (another host, or no permission)"));
  }
  auto fail = [own](std::string why) {
    close(own);
    return absl::FailedPreconditionError(std::move(why));
  };
  struct stat st {};
  if (fstat(own, &st) != 0 || static_cast<uint64_t>(st.st_size) != bytes) {
    return fail(absl::StrCat(path, " is ", st.st_size, " bytes, not the ", bytes, " offered"));
  }
  const int seals = fcntl(own, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return fail(absl::StrCat(path, " is not a memfd sealed against shrinking and growing"));
  }
  absl::StatusOr<char*> data = Map(own, bytes);
  close(own);  // the mapping keeps the memory
  if (!data.ok()) return absl::FailedPreconditionError(data.status().message());
  if (std::memcmp(*data, token.data(), kTokenBytes) != 0) {
    munmap(*data, bytes);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " does not hold the token of the region offered"));
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(*data, bytes, -1, token));
}

SharedRegion::~SharedRegion() {
  munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<absl::Span<char>> SharedRegion::Range(uint64_t offset, uint64_t length) const {
  if (offset < kHeaderBytes || offset > size_ || length > size_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("range [", offset, ", +", length,
                                              ") is not within the shared region's ", size_,
                                              " bytes (values start at ", kHeaderBytes, ")"));
  }
  return absl::Span<char>(data_ + offset, length);
}

}  // namespace cairn
