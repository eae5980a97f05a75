#include "common/security/transport_security.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/security/access_policy.h"
#include "common/security/certificate_check.h"
#include "common/security/certificate_mirror.h"
#include "common/security/token_store.h"

namespace cairn {
namespace {

constexpr char kPushMethod[] = "/cairn.v1.ParameterService/Push";

// The role the certificate of `context`'s peer carries, and its subject.
std::optional<Role> CertificateRole(const grpc::AuthContext& context, std::string* subject) {
  for (const grpc::string_ref& v : context.FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
    subject->assign(v.data(), v.size());
  }
  return RoleFromSubject(*subject);
}

// Checks each call a server receives: the caller's role comes from a bearer
// token when it sends one ("authorization: Bearer <token>"), else from its
// certificate's OU; the method must allow that role. A Push always takes
// the certificate's role (its handler checks the forwarded flag against it,
// CallerRole). Nothing is written into the auth context: gRPC shares it
// among every call of a connection. Runs inline on
// gRPC's thread (IsBlocking false): it reads no file but the tokens file,
// and that at most once a second.
class CallAuthenticator final : public grpc::AuthMetadataProcessor {
 public:
  explicit CallAuthenticator(std::unique_ptr<TokenStore> tokens) : tokens_(std::move(tokens)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* /*response*/) override {
    absl::string_view method;
    absl::string_view authorization;
    bool has_authorization = false;
    for (const auto& [key, value] : metadata) {
      const absl::string_view k(key.data(), key.size());
      if (k == ":path") method = absl::string_view(value.data(), value.size());
      if (k == "authorization") {
        authorization = absl::string_view(value.data(), value.size());
        has_authorization = true;
      }
    }
    std::optional<Role> role;
    std::string subject;
    const std::optional<Role> certificate_role = CertificateRole(*context, &subject);
    if (has_authorization) {
      // Never echoed back, never logged; taken out of the call's metadata.
      consumed->emplace("authorization", std::string(authorization));
      absl::string_view token = authorization;
      if (!absl::ConsumePrefix(&token, "Bearer ")) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "the authorization metadata is not \"Bearer <token>\"");
      }
      if (tokens_ == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "this process accepts no bearer tokens (security.tokens_file)");
      }
      absl::StatusOr<Role> by_token = tokens_->Lookup(token, absl::Now());
      if (!by_token.ok()) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            std::string(by_token.status().message()));
      }
      role = method == kPushMethod ? certificate_role : *by_token;
    } else {
      role = certificate_role;
    }
    if (!role) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("the caller's certificate (", subject.empty() ? "none" : subject,
                       ") names no role: its subject needs OU=", AllRoleNames()));
    }
    if (absl::Status s = AuthorizeCall(method, *role); !s.ok()) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(s.message()));
    }
    return grpc::Status::OK;
  }

 private:
  const std::unique_ptr<TokenStore> tokens_;
};

// gRPC's host name check, with a message that says what to fix (field case
// C12): the address dialled, the names the certificate carries, and the
// settings that decide either.
class HostNameCheck final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> callback, grpc::Status* sync_status) override {
    grpc::Status status;
    const bool sync = builtin_.Verify(request, std::move(callback), &status);
    if (!sync) return false;  // the built-in check is synchronous; never taken
    if (status.ok()) {
      *sync_status = status;
      return true;
    }
    std::vector<std::string> names;
    for (const grpc::string_ref& n : request->dns_names()) {
      names.push_back(absl::StrCat("DNS:", absl::string_view(n.data(), n.size())));
    }
    for (const grpc::string_ref& n : request->ip_names()) {
      names.push_back(absl::StrCat("IP:", absl::string_view(n.data(), n.size())));
    }
    const absl::string_view target(request->target_name().data(), request->target_name().size());
    *sync_status = grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        absl::StrCat("the certificate of the peer at ", target, " names [",
                     absl::StrJoin(names, ", "), "], not the host dialled: issue it for that "
                     "name or address (tools/cairn-certs DIR --hosts NAME), or have the peer "
                     "advertise a name it carries (--advertise or CAIRN_ADVERTISE_HOST for a "
                     "server, "
                     "cluster.coordinator for the coordinator)"));
    return true;
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  grpc::experimental::HostNameCertificateVerifier builtin_;
};

struct Installed {
  std::shared_ptr<grpc::ChannelCredentials> channel;
  std::shared_ptr<grpc::ServerCredentials> server;
  CertificateFacts certificate;
  TransportSecurityFiles files;
  TlsFilePaths checked;  // the copies gRPC reads (CertificateMirror)
};

absl::Mutex g_mu;
std::shared_ptr<const Installed> g_installed ABSL_GUARDED_BY(g_mu);
// Set once g_installed is: read on every Push without the lock.
std::atomic<bool> g_enabled{false};

// OK when `facts`' subject carries one of `roles` (any when empty).
absl::Status CheckRole(const CertificateFacts& facts, const std::string& cert_file,
                       const std::vector<Role>& roles) {
  if (roles.empty()) return absl::OkStatus();
  const std::optional<Role> role = RoleFromSubject(facts.subject);
  for (Role r : roles) {
    if (role == r) return absl::OkStatus();
  }
  std::vector<std::string> wanted;
  for (Role r : roles) wanted.emplace_back(RoleName(r));
  return absl::InvalidArgumentError(absl::StrCat(
      "security.cert_file: the certificate in ", cert_file, " (", facts.subject, ") is ",
      role ? absl::StrCat("of role ", RoleName(*role)) : "of no role (no OU naming one)",
      "; this process runs as ", absl::StrJoin(wanted, " or "),
      " and needs a certificate of that role (tools/cairn-certs DIR --roles ", wanted.front(),
      ")"));
}

// Every check a set of TLS files passes before this process uses it, at
// start and at each reload.
absl::StatusOr<CertificateFacts> CheckIdentity(const TlsFilePaths& paths,
                                               const std::vector<Role>& roles) {
  if (absl::Status s = CheckCaBundle(paths.ca_file, "security.ca_file"); !s.ok()) return s;
  absl::StatusOr<CertificateFacts> facts = CheckCertificateAndKey(
      paths.cert_file, paths.key_file, "security.cert_file", "security.key_file", absl::Now());
  if (!facts.ok()) return facts.status();
  if (absl::Status s = CheckIssuedBy(paths.cert_file, paths.ca_file, "security.cert_file",
                                     "security.ca_file");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRole(*facts, paths.cert_file, roles); !s.ok()) return s;
  return facts;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read the token file ", path));
  std::ostringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " holds no token"));
  return token;
}

}  // namespace

absl::Status InstallTransportSecurity(const TransportSecurityFiles& files) {
  if (files.ca_file.empty() || files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs a CA bundle, a certificate and its key (security.ca_file, cert_file, "
        "key_file, or --tls-ca/--tls-cert/--tls-key)");
  }
  absl::StatusOr<CertificateFacts> facts =
      CheckIdentity({files.ca_file, files.cert_file, files.key_file}, files.roles);
  if (!facts.ok()) return facts.status();
  if (facts->not_after - absl::Now() < absl::Hours(24 * 7)) {
    LOG_WARN("the certificate in {} expires at {}; rotate it before (docs/security.md)",
             files.cert_file,
             absl::FormatTime(absl::RFC3339_sec, facts->not_after, absl::UTCTimeZone()));
  }
  std::unique_ptr<TokenStore> tokens;
  if (!files.tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenStore>> opened = TokenStore::Open(files.tokens_file);
    if (!opened.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("security.tokens_file: ", opened.status().message()));
    }
    tokens = std::move(*opened);
  }
  std::string token;
  if (!files.token_file.empty()) {
    absl::StatusOr<std::string> read = ReadToken(files.token_file);
    if (!read.ok()) return read.status();
    token = std::move(*read);
  }

  // gRPC reads the checked copies; the mirror renews them every
  // reload_every, and gRPC looks at them each second (they are in memory).
  absl::StatusOr<std::unique_ptr<CertificateMirror>> mirror = CertificateMirror::Create(
      {files.ca_file, files.cert_file, files.key_file},
      [roles = files.roles](const TlsFilePaths& paths) {
        return CheckIdentity(paths, roles).status();
      });
  if (!mirror.ok()) return mirror.status();
  const TlsFilePaths& mirrored = (*mirror)->mirrored();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      mirrored.key_file, mirrored.cert_file, mirrored.ca_file, /*refresh_interval_sec=*/1);

  grpc::experimental::TlsChannelCredentialsOptions channel_options;
  channel_options.set_certificate_provider(provider);
  channel_options.watch_root_certs();
  channel_options.watch_identity_key_cert_pairs();
  channel_options.set_verify_server_certs(true);
  channel_options.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<HostNameCheck>());
  std::shared_ptr<grpc::ChannelCredentials> channel =
      grpc::experimental::TlsCredentials(channel_options);
  if (!token.empty()) {
    channel = grpc::CompositeChannelCredentials(channel, grpc::AccessTokenCredentials(token));
  }

  grpc::experimental::TlsServerCredentialsOptions server_options(provider);
  server_options.watch_root_certs();
  server_options.watch_identity_key_cert_pairs();
  server_options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  std::shared_ptr<grpc::ServerCredentials> server =
      grpc::experimental::TlsServerCredentials(server_options);
  server->SetAuthMetadataProcessor(std::make_shared<CallAuthenticator>(std::move(tokens)));

  absl::MutexLock lock(&g_mu);
  if (g_installed != nullptr) {
    return absl::FailedPreconditionError("transport security is installed already");
  }
  g_installed = std::make_shared<Installed>(
      Installed{std::move(channel), std::move(server), *facts, files, mirrored});
  // Lives as long as the process, as the installation does.
  mirror->release()->StartRefreshing(std::max(absl::Seconds(1), files.reload_every));
  g_enabled.store(true, std::memory_order_release);
  LOG_INFO("TLS on: certificate {} ({}; names {}; valid to {}), CA {}", files.cert_file,
           facts->subject, facts->names,
           absl::FormatTime(absl::RFC3339_sec, facts->not_after, absl::UTCTimeZone()),
           files.ca_file);
  return absl::OkStatus();
}

bool TransportSecurityInstalled() { return g_enabled.load(std::memory_order_acquire); }

std::optional<TransportSecurityFiles> InstalledTransportSecurityFiles() {
  absl::MutexLock lock(&g_mu);
  if (g_installed == nullptr) return std::nullopt;
  return g_installed->files;
}

std::optional<std::pair<std::string, std::string>> InstalledCheckedCertificateAndKey() {
  absl::MutexLock lock(&g_mu);
  if (g_installed == nullptr) return std::nullopt;
  return std::make_pair(g_installed->checked.cert_file, g_installed->checked.key_file);
}

std::shared_ptr<grpc::ChannelCredentials> ProcessChannelCredentials() {
  {
    absl::MutexLock lock(&g_mu);
    if (g_installed != nullptr) return g_installed->channel;
  }
  return grpc::InsecureChannelCredentials();
}

std::shared_ptr<grpc::ServerCredentials> ProcessServerCredentials() {
  {
    absl::MutexLock lock(&g_mu);
    if (g_installed != nullptr) return g_installed->server;
  }
  return grpc::InsecureServerCredentials();
}

absl::Status CheckCertificateNames(const std::string& host, const std::string& setting) {
  std::shared_ptr<const Installed> installed;
  {
    absl::MutexLock lock(&g_mu);
    installed = g_installed;
  }
  if (installed == nullptr || CertificateNamesHost(installed->certificate, host)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "peers would dial this process at ", host, " (", setting, "), but its certificate ",
      installed->files.cert_file, " names [", installed->certificate.names,
      "]: under TLS they would refuse it. Use a name the certificate carries, or issue one "
      "that names ", host, " (tools/cairn-certs DIR --hosts ", host, ")"));
}

std::optional<Role> CallerRole(const grpc::ServerContextBase& context) {
  // Without TLS a call has no certificate, so no role: let through, before
  // gRPC builds an auth context for the call (an allocation per Push).
  if (!TransportSecurityInstalled()) return std::nullopt;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return std::nullopt;
  std::string subject;
  return CertificateRole(*auth, &subject);
}

}  // namespace cairn
