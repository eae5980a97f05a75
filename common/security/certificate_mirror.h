// A process's TLS files as gRPC reads them: checked copies of the CA bundle,
// the certificate and its key, kept in memory files (memfd) that gRPC's file
// watcher re-reads through /proc/self/fd paths. gRPC takes whatever it reads:
// a key that no longer matches its certificate, or a CA bundle cut short,
// would fail every new connection, in and out, until the next good read,
// with no word of which file. The mirror re-reads the configured files every
// period and copies a changed set only once it passes the same checks as at
// start; otherwise it keeps the set read before and says why, once for each
// set of contents it refuses (docs/security.md, "Rotating certificates").
//
// Linux only (memfd_create). Thread-safe: Refresh may run on any thread;
// StartRefreshing's thread calls it.
#ifndef CAIRN_COMMON_SECURITY_CERTIFICATE_MIRROR_H_
#define CAIRN_COMMON_SECURITY_CERTIFICATE_MIRROR_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn {

// Paths of one set of the three files.
struct TlsFilePaths {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

class CertificateMirror {
 public:
  // Checks a set as the process would use it; its messages name the paths
  // it is given. Called with the paths of the copies, whose names the
  // mirror then replaces by the configured ones.
  using Check = std::function<absl::Status(const TlsFilePaths& paths)>;

  // Reads `files`, checks them with `check` and mirrors them. Errors: the
  // check's, naming the configured files; InvalidArgument when a file cannot
  // be read; Internal when no memory file can be made.
  static absl::StatusOr<std::unique_ptr<CertificateMirror>> Create(TlsFilePaths files,
                                                                   Check check);
  ~CertificateMirror();

  // What gRPC is to read: "/proc/self/fd/N" for each file, fixed for the
  // mirror's life.
  const TlsFilePaths& mirrored() const { return mirrored_; }

  // Reads the configured files once. When their contents changed and pass
  // the check, copies them (gRPC's next read takes them) and logs the
  // certificate now in use; when they fail it, logs why and keeps the set
  // before (once per refused contents). Returns whether a new set is now
  // mirrored.
  bool Refresh() ABSL_LOCKS_EXCLUDED(mu_);

  // Calls Refresh every `every` on a thread of its own, for the rest of the
  // process's life: the mirror must then never be destroyed.
  void StartRefreshing(absl::Duration every);

 private:
  struct Contents {
    std::string ca, cert, key;
    bool operator==(const Contents& o) const {
      return ca == o.ca && cert == o.cert && key == o.key;
    }
  };
  CertificateMirror(TlsFilePaths files, Check check) : files_(std::move(files)), check_(check) {}
  absl::StatusOr<Contents> Read() const;
  // Writes `contents` to new memory files, checks them, and on success
  // puts them at the mirrored descriptors (the first time: makes those).
  absl::Status Install(const Contents& contents) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TlsFilePaths files_;
  const Check check_;
  TlsFilePaths mirrored_;
  absl::Mutex mu_;
  int fds_[3] ABSL_GUARDED_BY(mu_) = {-1, -1, -1};  // CA, certificate, key
  Contents current_ ABSL_GUARDED_BY(mu_);
  Contents refused_ ABSL_GUARDED_BY(mu_);  // the last contents that failed the check
};

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_CERTIFICATE_MIRROR_H_
