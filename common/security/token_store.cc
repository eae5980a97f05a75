#include "common/security/token_store.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace cairn {
namespace {

int64_t ModificationTimeNs(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the tokens file"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::array<uint8_t, 32> Sha256(absl::string_view data) {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

absl::StatusOr<std::vector<TokenStore::Entry>> TokenStore::Parse(absl::string_view text,
                                                                 const std::string& path) {
  std::vector<Entry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": ", what,
          " (expected \"<role> <sha256 hex> <RFC 3339 expiry | never>\")"));
    };
    if (fields.size() == 1 && fields[0].size() >= 32 &&
        std::all_of(fields[0].begin(), fields[0].end(),
                    [](char c) { return absl::ascii_isxdigit(c); })) {
      return bad(
          "1 field, which looks like a token itself: this is a token file (admin.token, for "
          "cairnctl --token-file), not the tokens file of digests servers accept (tokens)");
    }
    if (fields.size() != 3) return bad(absl::StrCat(fields.size(), " fields"));
    Entry e;
    std::optional<Role> role = ParseRole(fields[0]);
    if (!role) return bad(absl::StrCat("unknown role '", fields[0], "', not ", AllRoleNames()));
    e.role = *role;
    if (fields[1].size() != 64 ||
        !std::all_of(fields[1].begin(), fields[1].end(), [](char c) { return absl::ascii_isxdigit(c); })) {
      return bad("the digest is not 64 hex digits");
    }
    const std::string bytes = absl::HexStringToBytes(fields[1]);
    std::copy(bytes.begin(), bytes.end(), e.digest.begin());
    if (fields[2] == "never") {
      e.expires = absl::InfiniteFuture();
    } else {
      std::string err;
      if (!absl::ParseTime(absl::RFC3339_full, fields[2], &e.expires, &err)) {
        return bad(absl::StrCat("the expiry '", fields[2], "' is not an RFC 3339 time"));
      }
    }
    entries.push_back(e);
  }
  return entries;
}

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Open(const std::string& path) {
  const int64_t mtime = ModificationTimeNs(path);
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<Entry>> entries = Parse(*text, path);
  if (!entries.ok()) return entries.status();
  std::unique_ptr<TokenStore> store(new TokenStore(path));
  absl::MutexLock lock(&store->mu_);
  store->entries_ = std::move(*entries);
  store->mtime_ns_ = mtime;
  return store;
}

void TokenStore::MaybeReload(absl::Time now) {
  if (now - checked_ < absl::Seconds(1)) return;
  checked_ = now;
  const int64_t mtime = ModificationTimeNs(path_);
  if (mtime == mtime_ns_) return;
  mtime_ns_ = mtime;
  absl::StatusOr<std::string> text = ReadFile(path_);
  absl::StatusOr<std::vector<Entry>> entries =
      text.ok() ? Parse(*text, path_) : absl::StatusOr<std::vector<Entry>>(text.status());
  if (!entries.ok()) {
    LOG_ERROR("keeping the tokens read before: {}", entries.status().message());
    return;
  }
  entries_ = std::move(*entries);
  LOG_INFO("read {} tokens from {}", entries_.size(), path_);
}

absl::StatusOr<Role> TokenStore::Lookup(absl::string_view token, absl::Time now) {
  const std::array<uint8_t, 32> digest = Sha256(token);
  absl::MutexLock lock(&mu_);
  MaybeReload(now);
  for (const Entry& e : entries_) {
    if (CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) != 0) continue;
    if (now >= e.expires) {
      return absl::UnauthenticatedError(absl::StrCat(
          "the bearer token expired at ", absl::FormatTime(absl::RFC3339_sec, e.expires,
                                                           absl::UTCTimeZone())));
    }
    return e.role;
  }
  return absl::UnauthenticatedError("the bearer token is not one this process accepts");
}

}  // namespace cairn
