#include "common/security/certificate_mirror.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/log.h"

namespace cairn {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A new memory file holding `bytes`; -1 with errno set on failure.
int MemoryFile(const char* name, const std::string& bytes) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

std::string FdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

}  // namespace

absl::StatusOr<std::unique_ptr<CertificateMirror>> CertificateMirror::Create(TlsFilePaths files,
                                                                             Check check) {
  std::unique_ptr<CertificateMirror> mirror(new CertificateMirror(std::move(files), check));
  absl::StatusOr<Contents> contents = mirror->Read();
  if (!contents.ok()) return contents.status();
  absl::MutexLock lock(&mirror->mu_);
  if (absl::Status s = mirror->Install(*contents); !s.ok()) return s;
  mirror->mirrored_ = {FdPath(mirror->fds_[0]), FdPath(mirror->fds_[1]),
                       FdPath(mirror->fds_[2])};
  return mirror;
}

CertificateMirror::~CertificateMirror() {
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<CertificateMirror::Contents> CertificateMirror::Read() const {
  Contents c;
  const struct {
    const std::string& path;
    std::string* into;
  } reads[] = {{files_.ca_file, &c.ca}, {files_.cert_file, &c.cert}, {files_.key_file, &c.key}};
  for (const auto& r : reads) {
    absl::StatusOr<std::string> bytes = ReadWhole(r.path);
    if (!bytes.ok()) return bytes.status();
    *r.into = *std::move(bytes);
  }
  return c;
}

absl::Status CertificateMirror::Install(const Contents& contents) {
  const std::string* bytes[3] = {&contents.ca, &contents.cert, &contents.key};
  static constexpr const char* kNames[3] = {"cairn-tls-ca", "cairn-tls-cert", "cairn-tls-key"};
  int fresh[3] = {-1, -1, -1};
  auto close_fresh = [&] {
    for (int fd : fresh) {
      if (fd >= 0) close(fd);
    }
  };
  for (int i = 0; i < 3; ++i) {
    fresh[i] = MemoryFile(kNames[i], *bytes[i]);
    if (fresh[i] < 0) {
      const absl::Status s = absl::InternalError(
          absl::StrCat("cannot make a memory file for TLS: ", std::strerror(errno)));
      close_fresh();
      return s;
    }
  }
  const TlsFilePaths at{FdPath(fresh[0]), FdPath(fresh[1]), FdPath(fresh[2])};
  if (absl::Status s = check_(at); !s.ok()) {
    close_fresh();
    return absl::Status(s.code(), absl::StrReplaceAll(s.message(), {{at.ca_file, files_.ca_file},
                                                                    {at.cert_file,
                                                                     files_.cert_file},
                                                                    {at.key_file,
                                                                     files_.key_file}}));
  }
  if (fds_[0] < 0) {  // the first set: these are the mirrored descriptors
    for (int i = 0; i < 3; ++i) fds_[i] = fresh[i];
  } else {
    // Each path now opens the new file. gRPC reads a key and its
    // certificate with their modification times before and after, and
    // reads again when they moved, so a read between two of these takes
    // the new pair at its next read.
    for (int i = 0; i < 3; ++i) {
      if (dup2(fresh[i], fds_[i]) < 0) {
        const absl::Status s = absl::InternalError(
            absl::StrCat("cannot replace a TLS memory file: ", std::strerror(errno)));
        close_fresh();
        return s;
      }
    }
    close_fresh();
  }
  current_ = contents;
  return absl::OkStatus();
}

bool CertificateMirror::Refresh() {
  absl::StatusOr<Contents> contents = Read();
  absl::MutexLock lock(&mu_);
  if (!contents.ok()) {
    // Said once for each error (a file a rotation left out, say).
    const Contents unreadable{std::string(contents.status().message()), "", ""};
    if (!(unreadable == refused_)) {
      refused_ = unreadable;
      LOG_WARN("TLS: keeping the certificate, key and CA read before: {}",
               contents.status().message());
    }
    return false;
  }
  if (*contents == current_) {
    if (refused_ == Contents{}) return false;
    // Put back as they were after a refused set: said, so that the log
    // shows the mistake cleared.
    refused_ = Contents{};
    LOG_INFO("TLS: {}, {} and {} are again the files in use", files_.cert_file, files_.key_file,
             files_.ca_file);
    return false;
  }
  if (*contents == refused_) return false;
  if (absl::Status s = Install(*contents); !s.ok()) {
    refused_ = *std::move(contents);
    LOG_ERROR("TLS: keeping the certificate, key and CA read before: {}", s.message());
    return false;
  }
  refused_ = Contents{};
  LOG_INFO("TLS: new connections now use the certificate in {}, its key in {} and the CA bundle "
           "in {} as they are now",
           files_.cert_file, files_.key_file, files_.ca_file);
  return true;
}

void CertificateMirror::StartRefreshing(absl::Duration every) {
  std::thread([this, every] {
    for (;;) {
      absl::SleepFor(every);
      Refresh();
    }
  }).detach();
}

}  // namespace cairn
