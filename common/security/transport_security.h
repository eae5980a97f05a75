// This process's transport security (docs/security.md): mutual TLS on every
// gRPC channel and server it makes, with the caller's role checked on every
// call a server receives. A process has one identity: main() installs it
// once, before it makes any channel or server, and common/grpc_util.h uses it
// for all of them. Without an installation, channels and servers are
// plaintext (a local job).
#ifndef CAIRN_COMMON_SECURITY_TRANSPORT_SECURITY_H_
#define CAIRN_COMMON_SECURITY_TRANSPORT_SECURITY_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/security/roles.h"

namespace grpc {
class ChannelCredentials;
class ServerCredentials;
class ServerContextBase;
}  // namespace grpc

namespace cairn {

struct TransportSecurityFiles {
  std::string ca_file;      // PEM CAs that peers' certificates must chain to
  std::string cert_file;    // this process's certificate chain (PEM)
  std::string key_file;     // its private key (PEM, unencrypted)
  std::string tokens_file;  // bearer tokens this process's servers accept; empty: none
  std::string token_file;   // a token this process sends with every call (tools); empty: none
  absl::Duration reload_every = absl::Seconds(10);  // the files are re-read this often
  // The roles this process's certificate may carry (its subject's OU);
  // empty: any.
  std::vector<Role> roles;
};

// Checks the files (readable, a certificate valid now whose key matches,
// issued by a CA in the bundle and of one of `roles`, a well-formed tokens
// file) and makes them this process's
// identity: every later channel verifies its server against ca_file and
// presents cert_file; every later server requires and verifies a client
// certificate, and refuses calls its policy does not allow
// (common/security/access_policy.h). Certificate files are re-read every
// `reload_every`: new connections use new files without a restart, once
// they pass the same checks (until then, the files read before:
// common/security/certificate_mirror.h).
// InvalidArgument naming the file and what is wrong; FailedPrecondition when
// called twice. Not thread-safe against concurrent channel creation: call in
// main() first.
absl::Status InstallTransportSecurity(const TransportSecurityFiles& files);

// Whether InstallTransportSecurity succeeded in this process.
bool TransportSecurityInstalled();

// The files InstallTransportSecurity installed; nullopt before (or without)
// an installation. Thread-safe.
std::optional<TransportSecurityFiles> InstalledTransportSecurityFiles();

// The paths of the checked copies of the certificate and key that gRPC
// reads (common/security/certificate_mirror.h): the set in use, renewed
// only by one that passes the start's checks. nullopt before (or without)
// an installation. Thread-safe.
std::optional<std::pair<std::string, std::string>> InstalledCheckedCertificateAndKey();

// Credentials for channels and servers: TLS after an installation,
// insecure otherwise. Thread-safe.
std::shared_ptr<grpc::ChannelCredentials> ProcessChannelCredentials();
std::shared_ptr<grpc::ServerCredentials> ProcessServerCredentials();

// OK when peers dialling `host` (the address this process advertises, or the
// coordinator's address in cluster.coordinator) will accept this process's
// certificate, or when TLS is off. InvalidArgument otherwise, naming the
// host, the names the certificate carries and `setting` (what decides the
// host), so a process that would be unreachable under TLS fails at its start
// (field case C12) instead of at every peer's handshake. Thread-safe.
absl::Status CheckCertificateNames(const std::string& host, const std::string& setting);

// The role the certificate of `context`'s caller carries (the role a Push is
// authorized under; a bearer token does not change it); nullopt when
// transport security is off (every caller is let through). Thread-safe.
std::optional<Role> CallerRole(const grpc::ServerContextBase& context);

}  // namespace cairn

#endif  // CAIRN_COMMON_SECURITY_TRANSPORT_SECURITY_H_
