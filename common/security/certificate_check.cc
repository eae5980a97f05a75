#include "common/security/certificate_check.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/security/openssl_ptr.h"

namespace cairn {
namespace {

using openssl::Bio;
using openssl::KeyPtr;
using openssl::X509Ptr;

// Why `path` could not be opened, from errno, for the message after its
// name; a relative path is said to be taken from the working directory.
std::string WhyUnreadable(const std::string& path) {
  std::string why = absl::StrCat(" (", std::strerror(errno));
  if (!path.empty() && path.front() != '/') {
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (!ec) absl::StrAppend(&why, "; a relative path, taken from ", cwd.string());
  }
  return why + ")";
}

absl::Time FromAsn1(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromTM(tm, absl::UTCTimeZone());
}

std::string Subject(X509* cert) {
  Bio out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, len);
}

std::string Names(X509* cert, std::vector<std::string>* dns, std::vector<std::string>* ips) {
  std::string out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (!out.empty()) out += ", ";
    if (n->type == GEN_DNS) {
      dns->emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)),
                        ASN1_STRING_length(n->d.dNSName));
      out += absl::StrCat("DNS:", dns->back());
    } else if (n->type == GEN_IPADD) {
      const int len = ASN1_STRING_length(n->d.iPAddress);
      char text[INET6_ADDRSTRLEN] = "?";
      inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(n->d.iPAddress), text,
                sizeof(text));
      ips->emplace_back(text);
      out += absl::StrCat("IP:", text);
    } else {
      out += "other";
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

}  // namespace

absl::StatusOr<CertificateFacts> CheckCertificateAndKey(const std::string& cert_file,
                                                        const std::string& key_file,
                                                        const std::string& setting,
                                                        const std::string& key_setting,
                                                        absl::Time now) {
  Bio cert_bio(BIO_new_file(cert_file.c_str(), "r"));
  if (cert_bio == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": cannot read the certificate file ", cert_file,
                     WhyUnreadable(cert_file)));
  }
  X509Ptr cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": ", cert_file, " holds no PEM certificate"));
  }
  Bio key_bio(BIO_new_file(key_file.c_str(), "r"));
  if (key_bio == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_setting, ": cannot read the private key file ", key_file,
                     WhyUnreadable(key_file), " (for ",
                     cert_file, ")"));
  }
  KeyPtr key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_setting, ": ", key_file, " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_setting, ": the private key in ", key_file,
                     " does not belong to the certificate in ", cert_file));
  }
  CertificateFacts facts;
  facts.subject = Subject(cert.get());
  facts.names = Names(cert.get(), &facts.dns_names, &facts.ip_names);
  facts.not_before = FromAsn1(X509_get0_notBefore(cert.get()));
  facts.not_after = FromAsn1(X509_get0_notAfter(cert.get()));
  if (now < facts.not_before || now >= facts.not_after) {
    return absl::InvalidArgumentError(absl::StrCat(
        setting, ": the certificate in ", cert_file, " is valid from ",
        absl::FormatTime(absl::RFC3339_sec, facts.not_before, absl::UTCTimeZone()), " to ",
        absl::FormatTime(absl::RFC3339_sec, facts.not_after, absl::UTCTimeZone()),
        ", not now"));
  }
  return facts;
}

bool CertificateNamesHost(const CertificateFacts& facts, const std::string& host) {
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned char addr[16];
  const bool v4 = inet_pton(AF_INET, h.c_str(), addr) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, h.c_str(), addr) == 1;
  if (v4 || v6) {
    char text[INET6_ADDRSTRLEN];
    inet_ntop(v4 ? AF_INET : AF_INET6, addr, text, sizeof(text));  // one spelling per address
    return std::find(facts.ip_names.begin(), facts.ip_names.end(), text) != facts.ip_names.end();
  }
  const std::string lower = absl::AsciiStrToLower(h);
  for (const std::string& name : facts.dns_names) {
    const std::string n = absl::AsciiStrToLower(name);
    if (n == lower) return true;
    if (n.size() > 2 && n[0] == '*' && n[1] == '.') {
      const size_t dot = lower.find('.');
      if (dot != std::string::npos && dot > 0 && lower.substr(dot) == n.substr(1)) return true;
    }
  }
  return false;
}

absl::Status CheckCaBundle(const std::string& ca_file, const std::string& setting) {
  Bio bio(BIO_new_file(ca_file.c_str(), "r"));
  if (bio == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": cannot read the CA bundle ", ca_file, WhyUnreadable(ca_file)));
  }
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": ", ca_file, " holds no PEM certificate"));
  }
  return absl::OkStatus();
}

absl::Status CheckIssuedBy(const std::string& cert_file, const std::string& ca_file,
                           const std::string& setting, const std::string& ca_setting) {
  Bio bio(BIO_new_file(cert_file.c_str(), "r"));
  if (bio == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": cannot read the certificate file ", cert_file,
                     WhyUnreadable(cert_file)));
  }
  X509Ptr leaf(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (leaf == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, ": ", cert_file, " holds no PEM certificate"));
  }
  openssl::ChainPtr intermediates(sk_X509_new_null());
  while (X509* next = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(intermediates.get(), next);
  }
  ERR_clear_error();  // the end of the file
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(),
                                                                &X509_STORE_free);
  if (store == nullptr || X509_STORE_load_file(store.get(), ca_file.c_str()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(ca_setting, ": cannot read the CA bundle ", ca_file, " as certificates"));
  }
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      &X509_STORE_CTX_free);
  if (ctx == nullptr ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), intermediates.get()) != 1) {
    return absl::InternalError("cannot set up a certificate check (OpenSSL)");
  }
  if (X509_verify_cert(ctx.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        setting, ": the certificate in ", cert_file, " does not chain to a CA in ", ca_setting,
        " (", ca_file, "): ", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())),
        "; every peer trusting that bundle would refuse it"));
  }
  return absl::OkStatus();
}

}  // namespace cairn
