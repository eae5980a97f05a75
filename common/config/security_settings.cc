#include "common/config/security_settings.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace cairn {
namespace {

// Flag, else environment, else YAML; "{role}" replaced.
std::string Pick(const std::string& flag, const char* env_name, const std::string& yaml,
                 const EnvLookup& env, Role role) {
  std::string value = flag;
  if (value.empty()) {
    if (std::optional<std::string> v = env(env_name); v && !v->empty()) value = *v;
  }
  if (value.empty()) value = yaml;
  return absl::StrReplaceAll(value, {{"{role}", RoleName(role)}});
}

}  // namespace

void AddSecurityFlags(CLI::App* app, SecurityFlags* flags, Role role) {
  app->add_flag("--tls", flags->tls, "mutual TLS on every channel (security.tls; CAIRN_TLS=1)");
  app->add_option("--tls-ca", flags->ca_file, "PEM CA bundle (security.ca_file)");
  app->add_option("--tls-cert", flags->cert_file, "this process's certificate (security.cert_file)");
  app->add_option("--tls-key", flags->key_file, "its private key (security.key_file)");
  const bool answers = role == Role::kServer || role == Role::kCoordinator;
  const bool sends = role == Role::kAdmin || role == Role::kClient;
  // (An empty group keeps an option out of --help.)
  app->add_option("--tls-tokens", flags->tokens_file,
                  "bearer tokens accepted (security.tokens_file)")
      ->group(answers ? "Options" : "");
  app->add_option("--token-file", flags->token_file, "a bearer token to send with every call")
      ->group(sends ? "Options" : "");
}

absl::StatusOr<std::optional<TransportSecurityFiles>> ResolveSecurity(const SecurityConfig& yaml,
                                                                      const SecurityFlags& flags,
                                                                      const EnvLookup& env,
                                                                      Role role) {
  std::optional<std::string> tls_env = env("CAIRN_TLS");
  const bool on = flags.tls || yaml.tls || (tls_env && (*tls_env == "1" || *tls_env == "true"));
  if (!on) {
    // Files named on the command line mean TLS was meant: going on in
    // plaintext would only fail later, as an unreachable peer.
    const struct {
      const std::string& value;
      const char* flag;
    } given[] = {{flags.ca_file, "--tls-ca"},         {flags.cert_file, "--tls-cert"},
                 {flags.key_file, "--tls-key"},       {flags.tokens_file, "--tls-tokens"},
                 {flags.token_file, "--token-file"}};
    for (const auto& g : given) {
      if (!g.value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            g.flag, " is given but TLS is off for this ", RoleName(role),
            ": add --tls (or security.tls: true in the job file, or CAIRN_TLS=1)"));
      }
    }
    return std::optional<TransportSecurityFiles>();
  }
  TransportSecurityFiles files;
  files.ca_file = Pick(flags.ca_file, "CAIRN_TLS_CA_FILE", yaml.ca_file, env, role);
  files.cert_file = Pick(flags.cert_file, "CAIRN_TLS_CERT_FILE", yaml.cert_file, env, role);
  files.key_file = Pick(flags.key_file, "CAIRN_TLS_KEY_FILE", yaml.key_file, env, role);
  files.tokens_file = Pick(flags.tokens_file, "CAIRN_TLS_TOKENS_FILE", yaml.tokens_file, env, role);
  files.token_file = Pick(flags.token_file, "CAIRN_TOKEN_FILE", "", env, role);
  files.reload_every = yaml.reload_every;
  // A daemon's certificate is of its own role (a peer would refuse it
  // otherwise, or, for the coordinator, the servers its checkpoints);
  // cairnctl may hold an admin's or a reader's.
  if (role == Role::kServer || role == Role::kWorker || role == Role::kCoordinator) {
    files.roles = {role};
  }
  const struct {
    const std::string& value;
    const char* what;
  } needed[] = {{files.ca_file, "security.ca_file (--tls-ca, CAIRN_TLS_CA_FILE)"},
                {files.cert_file, "security.cert_file (--tls-cert, CAIRN_TLS_CERT_FILE)"},
                {files.key_file, "security.key_file (--tls-key, CAIRN_TLS_KEY_FILE)"}};
  for (const auto& n : needed) {
    if (n.value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS is on but ", n.what, " is not set for this ", RoleName(role)));
    }
  }
  return std::optional<TransportSecurityFiles>(std::move(files));
}

absl::Status SetUpTransportSecurity(const SecurityConfig& yaml, const SecurityFlags& flags,
                                    const EnvLookup& env, Role role) {
  absl::StatusOr<std::optional<TransportSecurityFiles>> files =
      ResolveSecurity(yaml, flags, env, role);
  if (!files.ok()) return files.status();
  if (!files->has_value()) return absl::OkStatus();
  return InstallTransportSecurity(**files);
}

}  // namespace cairn
