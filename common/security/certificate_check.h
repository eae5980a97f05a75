// Checks of PEM files before a process uses them for TLS, so a wrong path,
// a key that does not match its certificate or an expired certificate fails
// the start with a message naming the file, instead of every handshake
// failing later without one.
#ifndef CAIRN_COMMON_SECURITY_CERTIFICATE_CHECK_H_
#define CAIRN_COMMON_SECURITY_CERTIFICATE_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn {

struct CertificateFacts {
  std::string subject;    // RFC 2253 ("CN=cairn-worker,OU=worker,O=cairn")
  std::string names;      // subject alternative names, "DNS:a, IP:1.2.3.4"
  std::vector<std::string> dns_names;  // the DNS names among them
  std::vector<std::string> ip_names;   // the IP addresses, as inet_ntop writes them
  absl::Time not_before;
  absl::Time not_after;
};

// Reads the first certificate of `cert_file` and the key in `key_file`.
// InvalidArgument naming the file when either cannot be read or parsed, when
// the key does not belong to the certificate, or when the certificate is not
// valid at `now` (naming its validity); `setting` and `key_setting` name
// where the paths came from ("security.cert_file", "security.key_file") in
// the message.
absl::StatusOr<CertificateFacts> CheckCertificateAndKey(const std::string& cert_file,
                                                        const std::string& key_file,
                                                        const std::string& setting,
                                                        const std::string& key_setting,
                                                        absl::Time now);

// Whether a peer dialling `host` (a DNS name or an IP address) would accept
// the certificate `facts` describe: an IP address must be among its IP
// names; a DNS name must equal one of its DNS names (case-insensitive), or
// match a wildcard "*.rest" in its first label only (RFC 6125 6.4.3).
bool CertificateNamesHost(const CertificateFacts& facts, const std::string& host);

// InvalidArgument naming `ca_file` unless it holds at least one PEM
// certificate.
absl::Status CheckCaBundle(const std::string& ca_file, const std::string& setting);

// OK when the certificate in `cert_file` (with the intermediates after it
// in that file) chains to a CA in `ca_file`, as a peer trusting only that
// bundle would verify it; InvalidArgument naming both files and OpenSSL's
// reason otherwise (a certificate of another CA: every peer of the job
// would refuse it).
absl::Status CheckIssuedBy(const std::string& cert_file, const std::string& ca_file,
                           const std::string& setting, const std::string& ca_setting);

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_CERTIFICATE_CHECK_H_
