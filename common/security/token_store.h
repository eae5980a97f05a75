// The bearer tokens a server or the coordinator accepts (security.tokens_file;
// docs/security.md, "Tokens"). The file holds one token per line:
//
//   <role> <SHA-256 of the token, 64 hex digits> <expiry: RFC 3339 | never>
//
// with blank lines and "#" comments ignored. Only digests are kept, on disk
// and in memory; a presented token is hashed and compared in constant time.
// The file is read again when its modification time changes (checked at
// most once a second), so tokens are added or revoked without a restart.
#ifndef CAIRN_COMMON_SECURITY_TOKEN_STORE_H_
#define CAIRN_COMMON_SECURITY_TOKEN_STORE_H_

#include <array>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/security/roles.h"

namespace cairn {

class TokenStore {
 public:
  struct Entry {
    Role role;
    std::array<uint8_t, 32> digest;  // SHA-256 of the token
    absl::Time expires;              // InfiniteFuture for "never"
  };

  // Reads `path`. NotFound when it is missing; InvalidArgument naming
  // path:line and what is wrong with a line.
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(const std::string& path);

  // Parses the text of a tokens file (`path` only names it in errors).
  static absl::StatusOr<std::vector<Entry>> Parse(absl::string_view text, const std::string& path);

  // The role of `token` at `now`. Unauthenticated when no entry has its
  // digest ("not a token this process accepts") or when it expired (naming
  // when); the token itself never appears in the message. Thread-safe.
  absl::StatusOr<Role> Lookup(absl::string_view token, absl::Time now);

 private:
  explicit TokenStore(std::string path) : path_(std::move(path)) {}
  // Re-reads the file when its modification time changed; keeps the old
  // entries (and logs why) when the new text is bad.
  void MaybeReload(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t mtime_ns_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Time checked_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// SHA-256 of `data`.
std::array<uint8_t, 32> Sha256(absl::string_view data);

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_TOKEN_STORE_H_
