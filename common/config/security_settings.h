// Where a process's TLS files come from (docs/security.md, "Configuring"):
// a flag, else an environment variable, else the job YAML's security:
// section, with "{role}" in a path replaced by the process's role. The
// flags and variables let a Kubernetes Secret or a Slurm spool hand each
// process its own files.
//
//   --tls              CAIRN_TLS=1            security.tls: true
//   --tls-ca FILE      CAIRN_TLS_CA_FILE      security.ca_file
//   --tls-cert FILE    CAIRN_TLS_CERT_FILE    security.cert_file
//   --tls-key FILE     CAIRN_TLS_KEY_FILE     security.key_file
//   --tls-tokens FILE  CAIRN_TLS_TOKENS_FILE  security.tokens_file
//   --token-file FILE  CAIRN_TOKEN_FILE       (cairnctl: the bearer token sent)
#ifndef CAIRN_COMMON_CONFIG_SECURITY_SETTINGS_H_
#define CAIRN_COMMON_CONFIG_SECURITY_SETTINGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/config/job_config.h"
#include "common/identity.h"
#include "common/security/roles.h"
#include "common/security/transport_security.h"

namespace CLI {
class App;
}  // namespace CLI

namespace cairn {

struct SecurityFlags {
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string tokens_file;
  std::string token_file;
};

// Adds the flags above to `app`. `role`'s --help lists the ones it uses:
// --tls-tokens for a process that answers calls (server, coordinator),
// --token-file for one that sends a token (cairnctl: admin, client); the
// other is accepted and unused, so one set of flags serves every process of
// a job. `flags` must outlive the parse.
void AddSecurityFlags(CLI::App* app, SecurityFlags* flags, Role role);

// The files this process uses, or nullopt when TLS is off (neither
// security.tls, --tls nor CAIRN_TLS is set). InvalidArgument naming the
// setting when TLS is on and a file is not named anywhere.
absl::StatusOr<std::optional<TransportSecurityFiles>> ResolveSecurity(const SecurityConfig& yaml,
                                                                      const SecurityFlags& flags,
                                                                      const EnvLookup& env,
                                                                      Role role);

// ResolveSecurity, then InstallTransportSecurity when TLS is on. OK and
// nothing installed when it is off. Call first thing in main().
absl::Status SetUpTransportSecurity(const SecurityConfig& yaml, const SecurityFlags& flags,
                                    const EnvLookup& env, Role role);

}  // namespace cairn

#endif  // CAIRN_COMMON_CONFIG_SECURITY_SETTINGS_H_
