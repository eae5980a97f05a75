#include "common/security/metrics_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/security/openssl_ptr.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"

namespace cairn {
namespace {

struct Files {
  std::string cert;
  std::string key;
};

absl::Mutex g_mu;
Files g_files ABSL_GUARDED_BY(g_mu);

Files CurrentFiles() {
  absl::MutexLock lock(&g_mu);
  return g_files;
}

std::string OpenSslReason() {
  const unsigned long e = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
  ERR_clear_error();
  if (e == 0) return "no PEM data";
  char buffer[256];
  ERR_error_string_n(e, buffer, sizeof(buffer));
  return buffer;
}

// A certificate chain and its key, read whole before anything uses them.
struct Identity {
  openssl::X509Ptr leaf;
  openssl::ChainPtr chain{sk_X509_new_null()};
  openssl::KeyPtr key;
};

absl::StatusOr<Identity> ReadIdentity(const Files& files) {
  Identity id;
  {
    openssl::Bio in(BIO_new_file(files.cert.c_str(), "r"));
    if (in == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics.tls: cannot read ", files.cert, ": ", OpenSslReason()));
    }
    id.leaf.reset(PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr));
    if (id.leaf == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics.tls: ", files.cert, " holds no PEM certificate: ", OpenSslReason()));
    }
    while (X509* more = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)) {
      sk_X509_push(id.chain.get(), more);
    }
    ERR_clear_error();  // the end of the file
  }
  openssl::Bio in(BIO_new_file(files.key.c_str(), "r"));
  if (in == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics.tls: cannot read ", files.key, ": ", OpenSslReason()));
  }
  id.key.reset(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr));
  if (id.key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics.tls: ", files.key, " holds no unencrypted PEM key: ", OpenSslReason()));
  }
  if (X509_check_private_key(id.leaf.get(), id.key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("metrics.tls: the key in ", files.key,
                                                   " does not match the certificate in ",
                                                   files.cert));
  }
  return id;
}

// SSL_CTX_set_cert_cb: the files as they are now, for this handshake. A pair
// that does not read or match (mid-rotation) leaves the context's pair.
int ReloadForHandshake(SSL* ssl, void* /*arg*/) {
  absl::StatusOr<Identity> id = ReadIdentity(CurrentFiles());
  if (!id.ok()) {
    LOG_WARN("/metrics handshake uses the certificate loaded before: {}", id.status().message());
    return 1;
  }
  if (SSL_use_cert_and_key(ssl, id->leaf.get(), id->key.get(), id->chain.get(),
                           /*override=*/1) != 1) {
    LOG_WARN("/metrics handshake uses the certificate loaded before: {}", OpenSslReason());
  }
  return 1;
}

}  // namespace

absl::Status SetMetricsTlsFiles(const std::string& cert_file, const std::string& key_file) {
  const Files files{cert_file, key_file};
  absl::StatusOr<Identity> id = ReadIdentity(files);
  if (!id.ok()) return id.status();
  absl::MutexLock lock(&g_mu);
  g_files = files;
  return absl::OkStatus();
}

bool SetUpMetricsTlsContext(void* ssl_ctx) {
  SSL_CTX* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  absl::StatusOr<Identity> id = ReadIdentity(CurrentFiles());
  if (!id.ok()) {
    LOG_ERROR("cannot serve /metrics over TLS: {}", id.status().message());
    return false;
  }
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_cert_and_key(ctx, id->leaf.get(), id->key.get(), id->chain.get(),
                               /*override=*/1) != 1) {
    LOG_ERROR("cannot serve /metrics over TLS: {}", OpenSslReason());
    return false;
  }
  SSL_CTX_set_cert_cb(ctx, &ReloadForHandshake, nullptr);
  return true;
}

}  // namespace cairn
