// The pieces of transport security that need no network: roles from
// certificate subjects, the method policy, the tokens file, host names
// against certificate names, where each process's files come from, and the
// security: section of the job YAML.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <optional>

#include "absl/strings/escaping.h"
#include "common/config/security_settings.h"
#include "common/security/access_policy.h"
#include "common/security/certificate_check.h"
#include "common/security/certificate_mirror.h"
#include "common/security/roles.h"
#include "common/security/token_store.h"
#include "tests/common/config_test_util.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

TEST_CASE("A certificate's role is the OU of its subject that names one", "[common][security]") {
  CHECK(RoleFromSubject("CN=cairn-worker,OU=worker,O=cairn") == Role::kWorker);
  CHECK(RoleFromSubject("OU=team-a, OU=server, CN=x") == Role::kServer);
  CHECK(RoleFromSubject("CN=admin,O=cairn") == std::nullopt);  // a CN is no role
  CHECK(RoleFromSubject("CN=x,OU=Worker") == std::nullopt);    // exact spelling only
  CHECK(RoleFromSubject("") == std::nullopt);
  CHECK(AllRoleNames() == "worker|server|coordinator|admin|client");
}

TEST_CASE("The method policy: who may call what, and the refusal names the roles needed",
          "[common][security]") {
  CHECK(AuthorizeCall("/cairn.v1.ParameterService/Pull", Role::kWorker).ok());
  CHECK(AuthorizeCall("/cairn.v1.ParameterService/Replicate", Role::kServer).ok());
  CHECK(AuthorizeCall("/cairn.v1.Coordinator/Checkpoint", Role::kAdmin).ok());
  CHECK(AuthorizeCall("/cairn.v1.ParameterService/Checkpoint", Role::kCoordinator).ok());
  CHECK(AuthorizeCall("/cairn.v1.Coordinator/ListMembers", Role::kClient).ok());
  CHECK(AuthorizeCall("/grpc.health.v1.Health/Check", Role::kClient).ok());
  const absl::Status s = AuthorizeCall("/cairn.v1.ParameterService/Replicate", Role::kWorker);
  CHECK(s.code() == absl::StatusCode::kPermissionDenied);
  CHECK(s.message() ==
        "/cairn.v1.ParameterService/Replicate needs role server; the caller has role worker");
  CHECK(AuthorizeCall("/cairn.v1.Coordinator/RegisterServer", Role::kAdmin).code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(AuthorizeCall("/cairn.v1.Coordinator/Nope", Role::kAdmin).message() ==
        "/cairn.v1.Coordinator/Nope is not a method any role may call");
  // Push: a worker's own push, or a server's forwarded copy; nothing else.
  CHECK(AuthorizePush(false, Role::kWorker).ok());
  CHECK(AuthorizePush(true, Role::kServer).ok());
  CHECK(AuthorizePush(false, Role::kServer).code() == absl::StatusCode::kPermissionDenied);
  CHECK(AuthorizePush(true, Role::kWorker).code() == absl::StatusCode::kPermissionDenied);
  CHECK(AuthorizePush(false, Role::kAdmin).code() == absl::StatusCode::kPermissionDenied);
}

std::string HexDigest(absl::string_view token) {
  const std::array<uint8_t, 32> d = Sha256(token);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(d.data()), 32));
}

TEST_CASE("Tokens: digests only, expiry, and a file that changes is read again",
          "[common][security]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("tokens");
  REQUIRE(dir.ok());
  const std::string path = *dir + "/tokens";
  std::ofstream(path) << "# comment\n\nadmin " << HexDigest("good") << " never\n"
                      << "client " << HexDigest("old") << " 2020-01-01T00:00:00Z\n";
  absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(path);
  REQUIRE(store.ok());
  const absl::Time now = absl::Now();
  CHECK(*(*store)->Lookup("good", now) == Role::kAdmin);
  const absl::StatusOr<Role> old = (*store)->Lookup("old", now);
  CHECK(old.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK(old.status().message() == "the bearer token expired at 2020-01-01T00:00:00+00:00");
  const absl::StatusOr<Role> unknown = (*store)->Lookup("guess", now);
  CHECK(unknown.status().message() == "the bearer token is not one this process accepts");
  // Revoked by rewriting the file (a later modification time).
  absl::SleepFor(absl::Milliseconds(20));
  std::ofstream(path) << "worker " << HexDigest("new") << " never\n";
  const absl::Time later = now + absl::Seconds(2);
  CHECK(*(*store)->Lookup("new", later) == Role::kWorker);
  CHECK_FALSE((*store)->Lookup("good", later).ok());

  auto error = [](const std::string& text) {
    return std::string(TokenStore::Parse(text, "tokens").status().message());
  };
  CHECK(error("admin abc never").find("tokens:1: the digest is not 64 hex digits") == 0);
  CHECK(error("\nroot " + HexDigest("x") + " never").find("tokens:2: unknown role 'root'") == 0);
  CHECK(error("admin " + HexDigest("x")).find("tokens:1: 2 fields") == 0);
  // A token given where the tokens file goes.
  CHECK(error(std::string(64, 'a') + "\n").find("tokens:1: 1 field, which looks like a token "
                                                 "itself: this is a token file") == 0);
  CHECK(error("admin " + HexDigest("x") + " tomorrow")
            .find("tokens:1: the expiry 'tomorrow' is not an RFC 3339 time") == 0);
  CHECK(TokenStore::Open(*dir + "/missing").status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("A host is named by a certificate as a TLS peer checks it (C12)",
          "[common][security][cases]") {
  CertificateFacts facts;
  facts.dns_names = {"localhost", "*.pods.example.org", "Node-1.example.org"};
  facts.ip_names = {"127.0.0.1", "::1", "10.0.0.7"};
  CHECK(CertificateNamesHost(facts, "localhost"));
  CHECK(CertificateNamesHost(facts, "node-1.EXAMPLE.org"));
  CHECK(CertificateNamesHost(facts, "w-3.pods.example.org"));
  CHECK_FALSE(CertificateNamesHost(facts, "a.b.pods.example.org"));  // one label only
  CHECK_FALSE(CertificateNamesHost(facts, "pods.example.org"));
  CHECK(CertificateNamesHost(facts, "10.0.0.7"));
  CHECK(CertificateNamesHost(facts, "[::1]"));
  CHECK(CertificateNamesHost(facts, "0:0:0:0:0:0:0:1"));  // another spelling of ::1
  CHECK_FALSE(CertificateNamesHost(facts, "10.0.0.8"));
  CHECK_FALSE(CertificateNamesHost(facts, "127.0.0.2"));
}

TEST_CASE("Each process's TLS files: a flag, else the environment, else the YAML, {role} "
          "replaced",
          "[common][security][config]") {
  SecurityConfig yaml;
  yaml.tls = true;
  yaml.ca_file = "/certs/ca.pem";
  yaml.cert_file = "/certs/{role}.pem";
  yaml.key_file = "/certs/{role}.key";
  std::map<std::string, std::string> vars;
  const EnvLookup env = [&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  SecurityFlags flags;
  auto files = ResolveSecurity(yaml, flags, env, Role::kServer);
  REQUIRE(files.ok());
  REQUIRE(files->has_value());
  CHECK((*files)->cert_file == "/certs/server.pem");
  CHECK((*files)->key_file == "/certs/server.key");
  vars["CAIRN_TLS_CERT_FILE"] = "/secret/tls.crt";
  flags.key_file = "/flag/key.pem";
  files = ResolveSecurity(yaml, flags, env, Role::kWorker);
  CHECK((*files)->cert_file == "/secret/tls.crt");
  CHECK((*files)->key_file == "/flag/key.pem");
  CHECK((*files)->ca_file == "/certs/ca.pem");
  // Off unless asked for, whatever files the YAML or the environment names;
  // a file given as a flag with TLS off is a mistake, named.
  yaml.tls = false;
  files = ResolveSecurity(yaml, SecurityFlags(), env, Role::kWorker);
  REQUIRE(files.ok());
  CHECK_FALSE(files->has_value());
  CHECK(ResolveSecurity(yaml, flags, env, Role::kAdmin).status().message() ==
        "--tls-key is given but TLS is off for this admin: add --tls (or security.tls: true in "
        "the job file, or CAIRN_TLS=1)");
  vars["CAIRN_TLS"] = "1";
  CHECK(ResolveSecurity(yaml, SecurityFlags(), env, Role::kWorker)->has_value());
  // On, without a key anywhere: the error names the setting.
  SecurityConfig bare;
  bare.tls = true;
  bare.ca_file = "/certs/ca.pem";
  vars.clear();
  const auto missing = ResolveSecurity(bare, SecurityFlags(), env, Role::kCoordinator);
  CHECK(missing.status().message() ==
        "TLS is on but security.cert_file (--tls-cert, CAIRN_TLS_CERT_FILE) is not set for "
        "this coordinator");
}

TEST_CASE("The security: section of the job YAML", "[common][security][config]") {
  const JobConfig c = testing::ParseOk(R"(
security:
  tls: true
  ca_file: ca.pem
  cert_file: "{role}.pem"
  key_file: "{role}.key"
  tokens_file: tokens
  reload_every: 30s
)");
  CHECK(c.security.tls);
  CHECK(c.security.cert_file == "{role}.pem");
  CHECK(c.security.reload_every == absl::Seconds(30));
  CHECK(testing::ParseOk("cluster: {servers: 1}").security.tls == false);
  CHECK(testing::ParseError("security:\n  tls: yes please\n").find("job.yaml:2:8") == 0);
  CHECK(testing::ParseError("security:\n  cert: a.pem\n").find("job.yaml:2:3") == 0);
  CHECK(testing::ParseError("security:\n  reload_every: 100ms\n")
            .find("must be at least 1s") != std::string::npos);
}

TEST_CASE("Certificate checks at start name the file and what is wrong", "[common][security]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("certcheck");
  REQUIRE(dir.ok());
  absl::StatusOr<testing::ExitStatus> made = [&]() -> absl::StatusOr<testing::ExitStatus> {
    auto p = testing::Subprocess::Spawn(CAIRN_SOURCE_DIR "/tools/cairn-certs",
                                        {*dir + "/a", "--roles", "worker server"},
                                        *dir + "/cairn-certs");
    if (!p.ok()) return p.status();
    return (*p)->Wait(absl::Seconds(30));
  }();
  REQUIRE(made.ok());
  REQUIRE(made->code == 0);
  const std::string a = *dir + "/a";
  absl::StatusOr<CertificateFacts> facts =
      CheckCertificateAndKey(a + "/worker.pem", a + "/worker.key", "security.cert_file",
                             "security.key_file", absl::Now());
  REQUIRE(facts.ok());
  CHECK(facts->subject == "CN=cairn-worker,OU=worker,O=cairn");
  CHECK(facts->names.find("DNS:localhost, IP:127.0.0.1, IP:::1") == 0);
  const auto mismatch =
      CheckCertificateAndKey(a + "/worker.pem", a + "/server.key", "security.cert_file",
                             "security.key_file", absl::Now());
  CHECK(mismatch.status().message() == "security.key_file: the private key in " + a +
                                           "/server.key does not belong to the certificate in " +
                                           a + "/worker.pem");
  const auto later = CheckCertificateAndKey(a + "/worker.pem", a + "/worker.key",
                                            "security.cert_file", "security.key_file",
                                            absl::Now() + absl::Hours(24 * 400));
  CHECK(later.status().message().find("is valid from") != absl::string_view::npos);
  CHECK(CheckCertificateAndKey(a + "/none.pem", a + "/worker.key", "--tls-cert", "--tls-key",
                               absl::Now())
            .status()
            .message() == "--tls-cert: cannot read the certificate file " + a +
                              "/none.pem (No such file or directory)");
  CHECK(CheckCaBundle(a + "/worker.key", "security.ca_file").message() ==
        "security.ca_file: " + a + "/worker.key holds no PEM certificate");
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("A certificate from another CA, and the files gRPC reads: checked copies renewed "
          "only by a set that passes",
          "[common][security]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("certmirror");
  REQUIRE(dir.ok());
  for (const char* sub : {"/a", "/b", "/other"}) {
    auto p = testing::Subprocess::Spawn(
        CAIRN_SOURCE_DIR "/tools/cairn-certs",
        std::string(sub) == "/b" ? std::vector<std::string>{*dir + sub, "--roles", "server",
                                                             "--ca-from", *dir + "/a"}
                                 : std::vector<std::string>{*dir + sub, "--roles", "server"},
        *dir + sub + ".log");
    REQUIRE(p.ok());
    auto ended = (*p)->Wait(absl::Seconds(30));
    REQUIRE(ended.ok());
    REQUIRE(ended->code == 0);
  }
  const std::string a = *dir + "/a", b = *dir + "/b", other = *dir + "/other";
  CHECK(CheckIssuedBy(b + "/server.pem", a + "/ca.pem", "security.cert_file",
                      "security.ca_file")
            .ok());
  CHECK(CheckIssuedBy(other + "/server.pem", a + "/ca.pem", "security.cert_file",
                      "security.ca_file")
            .message() == "security.cert_file: the certificate in " + other +
                              "/server.pem does not chain to a CA in security.ca_file (" + a +
                              "/ca.pem): unable to get local issuer certificate; every peer "
                              "trusting that bundle would refuse it");

  // The live files, first a's.
  const std::string live = *dir + "/live";
  std::filesystem::create_directories(live);
  for (const char* f : {"/ca.pem", "/server.pem", "/server.key"}) {
    std::filesystem::copy_file(a + f, live + f);
  }
  auto check = [](const TlsFilePaths& p) -> absl::Status {
    if (absl::Status s = CheckCaBundle(p.ca_file, "security.ca_file"); !s.ok()) return s;
    return CheckCertificateAndKey(p.cert_file, p.key_file, "security.cert_file",
                                  "security.key_file", absl::Now())
        .status();
  };
  auto mirror = CertificateMirror::Create({live + "/ca.pem", live + "/server.pem",
                                           live + "/server.key"},
                                          check);
  REQUIRE(mirror.ok());
  const TlsFilePaths copies = (*mirror)->mirrored();
  CHECK(copies.key_file.rfind("/proc/self/fd/", 0) == 0);
  CHECK(Contents(copies.cert_file) == Contents(a + "/server.pem"));
  CHECK_FALSE((*mirror)->Refresh());  // nothing changed

  // b's key beside a's certificate: refused, a's pair stays.
  std::filesystem::copy_file(b + "/server.key", live + "/server.key",
                             std::filesystem::copy_options::overwrite_existing);
  CHECK_FALSE((*mirror)->Refresh());
  CHECK(Contents(copies.key_file) == Contents(a + "/server.key"));
  CHECK(Contents(copies.cert_file) == Contents(a + "/server.pem"));
  // b's certificate joins its key: taken.
  std::filesystem::copy_file(b + "/server.pem", live + "/server.pem",
                             std::filesystem::copy_options::overwrite_existing);
  CHECK((*mirror)->Refresh());
  CHECK(Contents(copies.key_file) == Contents(b + "/server.key"));
  CHECK(Contents(copies.cert_file) == Contents(b + "/server.pem"));
  CHECK(Contents(copies.ca_file) == Contents(a + "/ca.pem"));
  // A file gone: the copies stay.
  std::filesystem::remove(live + "/ca.pem");
  CHECK_FALSE((*mirror)->Refresh());
  CHECK(Contents(copies.ca_file) == Contents(a + "/ca.pem"));

  // At start the check's message names the configured files, not the copies.
  std::filesystem::copy_file(a + "/ca.pem", live + "/ca.pem");
  std::filesystem::copy_file(other + "/server.key", live + "/server.key",
                             std::filesystem::copy_options::overwrite_existing);
  auto refused =
      CertificateMirror::Create({live + "/ca.pem", live + "/server.pem", live + "/server.key"},
                                check);
  CHECK(refused.status().message() == "security.key_file: the private key in " + live +
                                          "/server.key does not belong to the certificate in " +
                                          live + "/server.pem");
}

}  // namespace
}  // namespace cairn
