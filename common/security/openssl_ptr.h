// Owning pointers for the OpenSSL objects Cairn reads certificates and keys
// into (common/security/). Each frees with its OpenSSL function; moving is
// the only transfer. Thread-compatible.
#ifndef CAIRN_COMMON_SECURITY_OPENSSL_PTR_H_
#define CAIRN_COMMON_SECURITY_OPENSSL_PTR_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>

namespace cairn::openssl {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct ChainFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};

using Bio = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using ChainPtr = std::unique_ptr<STACK_OF(X509), ChainFree>;

}  // namespace cairn::openssl

#endif  // CAIRN_COMMON_SECURITY_OPENSSL_PTR_H_
