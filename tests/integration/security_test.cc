// Mutual TLS and roles against a real job (fault scenario T7,
// docs/security.md): a coordinator and 2 servers (each partition with a
// backup, so primaries forward over TLS) with certificates from
// tools/cairn-certs; this test process is worker 0 through the client
// library. Each hostile client is refused with the documented code, and
// every table reads the same after each attempt; the same forged push sent
// with the worker's certificate is applied, so the refusals are what kept
// it out. Then cairnctl with missing, wrong, expired and valid tokens; no
// key or token in any log or /metrics page; a certificate rotated mid-job
// is served to new connections while the job goes on.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cairn/v1/coordinator.grpc.pb.h"
#include "cairn/v1/shard.grpc.pb.h"
#include "common/partitioning.h"
#include "common/security/token_store.h"
#include "common/security/transport_security.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"
#include "tests/tools/promtool_util.h"
#include "worker/client/client.h"

namespace cairn {
namespace {

using testing::TestCluster;

constexpr char kCairnCerts[] = CAIRN_SOURCE_DIR "/tools/cairn-certs";
constexpr char kCairnctl[] = CAIRN_BINARY_DIR "/bin/cairnctl";
constexpr int kWidth = 4;
constexpr int kDense = 16;
constexpr uint64_t kForgedKey = 7;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void RunOrFail(const std::vector<std::string>& command) {
  absl::StatusOr<testing::CommandResult> r = testing::RunCommand(command);
  INFO(r.status().message());
  REQUIRE(r.ok());
  INFO(r->output());
  REQUIRE(r->exit_code == 0);
}

// The job's certificates (and the process's identity: worker) are made once
// per test process, in a directory that lives as long as it.
const std::string& CertDir() {
  static const std::string dir = [] {
    absl::StatusOr<std::string> made = testing::MakeTempDir("security_certs");
    REQUIRE(made.ok());
    const std::string d = *made;
    RunOrFail({kCairnCerts, d + "/job"});
    REQUIRE(InstallTransportSecurity({.ca_file = d + "/job/ca.pem",
                                      .cert_file = d + "/job/worker.pem",
                                      .key_file = d + "/job/worker.key"})
                .ok());
    return d;
  }();
  return dir;
}

std::string JobYaml(const std::string& certs, const std::string& checkpoints,
                    const std::string& reload = "10s", bool metrics_tls = false) {
  return absl::StrCat(metrics_tls ? "metrics: {tls: true}\n" : "", R"(
cluster:
  coordinator: "127.0.0.1:1"
  servers: 2
  workers: 1
  partitions: 4
  replication: 2
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: asp
tables:
  - name: w
    kind: dense
    shape: [)", kDense, R"(]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
  - name: e
    kind: sparse
    width: )", kWidth, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
    aggregation: sum
checkpoint:
  dir: )", checkpoints, R"(
security:
  tls: true
  ca_file: )", certs, R"(/ca.pem
  cert_file: )", certs, R"(/{role}.pem
  key_file: )", certs, R"(/{role}.key
  tokens_file: )", certs, R"(/tokens
  reload_every: )", reload, "\n");
}

std::unique_ptr<Client> ConnectWorker(const TestCluster& cluster) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = 0;
  options.connect_timeout = absl::Seconds(30);
  options.rpc_deadline = absl::Seconds(10);
  options.cache_bytes = 0;
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(options);
  INFO(c.status().message() << "\n" << cluster.Logs());
  REQUIRE(c.ok());
  return *std::move(c);
}

// Every value of both tables (rows 0..9 of e), as the worker reads them.
std::vector<float> Snapshot(Client& client) {
  std::vector<float> w(kDense);
  REQUIRE(client.PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  std::vector<Key> keys = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> rows(keys.size() * kWidth);
  const absl::Status s = client.PullSparse("e", keys, absl::MakeSpan(rows)).get();
  INFO(s.message());
  REQUIRE(s.ok());
  w.insert(w.end(), rows.begin(), rows.end());
  return w;
}

std::shared_ptr<grpc::ChannelCredentials> TlsWith(const std::string& ca, const std::string& cert,
                                                  const std::string& key) {
  grpc::experimental::TlsChannelCredentialsOptions options;
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider;
  if (cert.empty()) {
    provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(ReadFile(ca));
  } else {
    provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
        ReadFile(ca), std::vector<grpc::experimental::IdentityKeyCertPair>{
                          {ReadFile(key), ReadFile(cert)}});
    options.watch_identity_key_cert_pairs();
  }
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  options.set_verify_server_certs(true);
  return grpc::experimental::TlsCredentials(options);
}

// A push of a gradient of 1 to row kForgedKey of e, as worker 0 would send
// it to the partition's primary: valid in every field but its credentials.
struct Forged {
  std::string primary_address;
  v1::PushRequest request;
};

Forged ForgePush(const TestCluster& cluster) {
  auto stub = v1::Coordinator::NewStub(grpc::CreateChannel(
      cluster.coordinator_address(), ProcessChannelCredentials()));
  grpc::ClientContext context;
  v1::GetPartitionMapResponse map;
  REQUIRE(stub->GetPartitionMap(&context, v1::GetPartitionMapRequest(), &map).ok());
  const uint32_t partition = SparsePartition(kForgedKey, map.map().num_partitions());
  const v1::PartitionAssignment& a = map.map().assignments(partition);
  Forged f;
  for (const v1::Member& s : map.map().servers()) {
    if (s.id() == a.primary()) f.primary_address = s.address();
  }
  uint64_t incarnation = 0;
  for (const v1::Member& w : map.map().workers()) {
    if (w.id() == 0) incarnation = w.incarnation();
  }
  REQUIRE_FALSE(f.primary_address.empty());
  f.request.set_map_version(map.map().version());
  f.request.set_worker_id(0);
  f.request.set_incarnation(incarnation);
  f.request.set_sequence(1u << 30);
  f.request.set_group(a.group());
  v1::TableValues* t = f.request.add_tables();
  t->set_table_id(1);
  t->set_table("e");
  t->set_dtype(v1::DTYPE_FLOAT32);
  t->add_shape(1);
  t->add_shape(kWidth);
  const uint64_t key = kForgedKey;  // little-endian on this machine
  t->set_keys(std::string(reinterpret_cast<const char*>(&key), sizeof(key)));
  const std::vector<float> grad(kWidth, 1.0f);
  t->set_values(std::string(reinterpret_cast<const char*>(grad.data()), kWidth * sizeof(float)));
  return f;
}

grpc::Status SendPush(const std::string& address,
                      const std::shared_ptr<grpc::ChannelCredentials>& creds,
                      const v1::PushRequest& request) {
  auto stub = v1::ParameterService::NewStub(grpc::CreateChannel(address, creds));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  v1::PushResponse response;
  return stub->Push(&context, request, &response);
}

std::string Cairnctl(const TestCluster& cluster, const std::string& certs,
                     const std::vector<std::string>& args, int* exit_code) {
  std::vector<std::string> command = {kCairnctl,  "--coordinator", cluster.coordinator_address(),
                                      "--timeout", "10s",           "--tls",
                                      "--tls-ca",  certs + "/ca.pem"};
  command.insert(command.end(), args.begin(), args.end());
  absl::StatusOr<testing::CommandResult> r = testing::RunCommand(command);
  REQUIRE(r.ok());
  *exit_code = r->exit_code;
  return r->output();
}

std::string WriteTokens(const std::string& path, const std::string& line) {
  std::ofstream(path) << line << "\n";
  return path;
}

// The base64 body lines of a PEM key, each long enough to be unmistakable.
std::vector<std::string> KeyMaterial(const std::string& key_file) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(ReadFile(key_file), '\n')) {
    if (line.size() >= 32 && line.find("-----") == absl::string_view::npos) {
      out.emplace_back(line);
    }
  }
  return out;
}

TEST_CASE("cairn-certs --help prints its usage and exits 0, a bad argument exits 2",
          "[integration][security]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("certs_help");
  REQUIRE(dir.ok());
  auto help = testing::Subprocess::Spawn(kCairnCerts, {"--help"}, *dir + "/help");
  REQUIRE(help.ok());
  auto ended = (*help)->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->ToString() == "exit code 0");
  const std::string out = (*help)->ReadStdout();
  CHECK(out.find("tools/cairn-certs DIR [--hosts NAME,IP,...]") != std::string::npos);
  CHECK(out.find("set -euo") == std::string::npos);  // the header only, not the code after it
  auto bad = testing::Subprocess::Spawn(kCairnCerts, {*dir + "/out", "--bogus"}, *dir + "/bad");
  REQUIRE(bad.ok());
  ended = (*bad)->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->ToString() == "exit code 2");
  CHECK((*bad)->ReadStderr().find("cairn-certs: unknown argument '--bogus'") != std::string::npos);

  // Bad values are named before anything is written; a directory that
  // held certificates keeps them as they were.
  RunOrFail({kCairnCerts, *dir + "/kept", "--roles", "worker"});
  const std::string key = ReadFile(*dir + "/kept/worker.key");
  // A CA bundle as a CA move leaves it: not one to sign with.
  RunOrFail({kCairnCerts, *dir + "/bundle", "--roles", "worker"});
  std::ofstream(*dir + "/bundle/ca.pem", std::ios::app) << ReadFile(*dir + "/kept/ca.pem");
  const struct {
    std::vector<std::string> args;
    std::string says;
  } refused[] = {
      {{"--days", "abc"}, "--days takes a whole number of days >= 1, not 'abc'"},
      {{"--hosts"}, "--hosts needs a value"},
      {{"--hosts", "node 1,10.0.0.9"}, "--hosts: 'node 1' is not a DNS name"},
      {{"--hosts", "10.0.0.300"}, "--hosts: '10.0.0.300' is not an IPv4 address"},
      {{"--roles", "worker chief"}, "--roles: 'chief' is not a role"},
      {{"--ca-from", *dir + "/none"}, "--ca-from: " + *dir + "/none holds no ca.pem and ca.key"},
      {{"--ca-from", *dir + "/bundle"}, *dir + "/bundle/ca.pem holds 2 certificates, not one CA"},
      {{"--hosts", "a..b"}, "--hosts: 'a..b' is not a DNS name"},
      {{"--hosts", "01.2.3.4"}, "--hosts: '01.2.3.4' is not an IPv4 address"},
      {{"--not-before", "20250101000000Z", "--not-after", "20240101000000Z"},
       "--not-before 20250101000000Z is not before --not-after 20240101000000Z"},
  };
  int i = 0;
  for (const auto& r : refused) {
    std::vector<std::string> args = {*dir + "/kept"};
    args.insert(args.end(), r.args.begin(), r.args.end());
    auto p = testing::Subprocess::Spawn(kCairnCerts, args, absl::StrCat(*dir, "/refused", i++));
    REQUIRE(p.ok());
    auto e = (*p)->Wait(absl::Seconds(30));
    REQUIRE(e.ok());
    INFO(absl::StrJoin(r.args, " ") << ": " << (*p)->ReadStderr());
    CHECK(e->ToString() == "exit code 2");
    CHECK((*p)->ReadStderr().find("cairn-certs: " + r.says) != std::string::npos);
  }
  CHECK(ReadFile(*dir + "/kept/worker.key") == key);
}

TEST_CASE("TLS: every hostile client is refused with its code and changes nothing",
          "[integration][security]") {
  const std::string dir = CertDir();
  const std::string certs = dir + "/job";
  // Certificates a hostile client might hold.
  RunOrFail({kCairnCerts, dir + "/other", "--roles", "worker server"});
  RunOrFail({kCairnCerts, dir + "/expired", "--roles", "worker", "--ca-from", certs,
             "--not-before", "20200101000000Z", "--not-after", "20200201000000Z"});
  // Keep the job's tokens: --ca-from wrote a new admin token only there.
  auto cluster = TestCluster::Start("security_hostile", JobYaml(certs, dir + "/checkpoints"), 2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> worker = ConnectWorker(**cluster);

  // Some training first, through the worker's certificate.
  const std::vector<float> ones(kDense, 1.0f);
  REQUIRE(worker->PushDense({{"w", ones}}).get().ok());
  const std::vector<Key> keys = {1, 2};
  const std::vector<float> rows(2 * kWidth, 0.5f);
  REQUIRE(worker->PushSparse("e", keys, rows).get().ok());
  const std::vector<float> before = Snapshot(*worker);
  CHECK(before[0] == -1.0f);

  const Forged forged = ForgePush(**cluster);
  const std::string ca = certs + "/ca.pem";
  struct Attempt {
    std::string name;
    std::shared_ptr<grpc::ChannelCredentials> creds;
    v1::PushRequest request;
    grpc::StatusCode code;
    std::string says;
  };
  v1::PushRequest as_backup = forged.request;
  as_backup.set_forwarded(true);
  const std::vector<Attempt> attempts = {
      {"plaintext", grpc::InsecureChannelCredentials(), forged.request,
       grpc::StatusCode::UNAVAILABLE, ""},
      {"TLS without a client certificate", TlsWith(ca, "", ""), forged.request,
       grpc::StatusCode::UNAVAILABLE, ""},
      {"a certificate from another CA",
       TlsWith(ca, dir + "/other/worker.pem", dir + "/other/worker.key"), forged.request,
       grpc::StatusCode::UNAVAILABLE, ""},
      {"an expired certificate",
       TlsWith(ca, dir + "/expired/worker.pem", dir + "/expired/worker.key"), forged.request,
       grpc::StatusCode::UNAVAILABLE, ""},
      {"a server certificate pushing as a worker",
       TlsWith(ca, certs + "/server.pem", certs + "/server.key"), forged.request,
       grpc::StatusCode::PERMISSION_DENIED, "Push needs role worker; the caller has role server"},
      {"a worker certificate sending a backup's copy",
       TlsWith(ca, certs + "/worker.pem", certs + "/worker.key"), as_backup,
       grpc::StatusCode::PERMISSION_DENIED, "needs role server; the caller has role worker"},
      {"a client certificate pushing", TlsWith(ca, certs + "/client.pem", certs + "/client.key"),
       forged.request, grpc::StatusCode::PERMISSION_DENIED,
       "Push needs role worker or server; the caller has role client"},
      {"an admin certificate pushing", TlsWith(ca, certs + "/admin.pem", certs + "/admin.key"),
       forged.request, grpc::StatusCode::PERMISSION_DENIED, "the caller has role admin"},
  };
  for (const Attempt& a : attempts) {
    const grpc::Status s = SendPush(forged.primary_address, a.creds, a.request);
    INFO(a.name << ": " << s.error_code() << " " << s.error_message());
    CHECK(s.error_code() == a.code);
    if (!a.says.empty()) CHECK(s.error_message().find(a.says) != std::string::npos);
    CHECK(Snapshot(*worker) == before);
  }

  // A worker certificate calling the coordinator's admin method.
  {
    auto stub = v1::Coordinator::NewStub(grpc::CreateChannel(
        (*cluster)->coordinator_address(),
        TlsWith(ca, certs + "/worker.pem", certs + "/worker.key")));
    grpc::ClientContext context;
    v1::CheckpointResponse response;
    const grpc::Status s = stub->Checkpoint(&context, v1::CheckpointRequest(), &response);
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(s.error_message() ==
          "/cairn.v1.Coordinator/Checkpoint needs role admin; the caller has role worker");
  }
  // ... and a server certificate registering as a worker.
  {
    auto stub = v1::Coordinator::NewStub(grpc::CreateChannel(
        (*cluster)->coordinator_address(),
        TlsWith(ca, certs + "/server.pem", certs + "/server.key")));
    grpc::ClientContext context;
    v1::RegisterWorkerRequest request;
    request.set_requested_id(0);
    v1::RegisterWorkerResponse response;
    const grpc::Status s = stub->RegisterWorker(&context, request, &response);
    CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(Snapshot(*worker) == before);
  }

  // cairnctl: a client certificate reads the status; checkpoints need an
  // admin token (or certificate).
  const std::vector<std::string> as_client = {"--tls-cert", certs + "/client.pem", "--tls-key",
                                              certs + "/client.key"};
  int code = 0;
  auto with = [&](std::vector<std::string> extra, std::vector<std::string> args) {
    std::vector<std::string> all = as_client;
    all.insert(all.end(), extra.begin(), extra.end());
    all.insert(all.end(), args.begin(), args.end());
    return all;
  };
  std::string out = Cairnctl(**cluster, certs, with({}, {"status"}), &code);
  INFO(out);
  CHECK(code == 0);
  out = Cairnctl(**cluster, certs, with({}, {"checkpoint", "--wait", "10s"}), &code);
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find("needs role admin; the caller has role client") != std::string::npos);
  const std::string wrong = WriteTokens(dir + "/wrong.token", std::string(64, 'a'));
  out = Cairnctl(**cluster, certs, with({"--token-file", wrong}, {"checkpoint"}), &code);
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find("the bearer token is not one this process accepts") != std::string::npos);
  // An expired token: the coordinator re-reads its tokens file when it
  // changes (TokenStore), so the entry is added while the job runs.
  const std::string expired_token = std::string(64, 'e');
  {
    const std::array<uint8_t, 32> digest = Sha256(expired_token);
    const std::string hex = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
    std::ofstream(certs + "/tokens", std::ios::app) << "admin " << hex << " 2020-01-01T00:00:00Z\n";
  }
  const std::string expired = WriteTokens(dir + "/expired.token", expired_token);
  absl::SleepFor(absl::Milliseconds(1100));  // the store looks at the file once a second
  out = Cairnctl(**cluster, certs, with({"--token-file", expired}, {"checkpoint"}), &code);
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find("the bearer token expired at 2020-01-01T00:00:00") != std::string::npos);
  CHECK(Snapshot(*worker) == before);
  out = Cairnctl(**cluster, certs,
                 with({"--token-file", certs + "/admin.token"}, {"checkpoint", "--wait", "20s"}),
                 &code);
  INFO(out);
  CHECK(code == 0);
  // With the job's file alone: its coordinator, and its security: section
  // read as admin ({role}), so the admin certificate may checkpoint.
  {
    const std::string job_file = dir + "/ctl-job.yaml";
    std::ofstream(job_file) << absl::StrReplaceAll(
        ReadFile((*cluster)->config_path()),
        {{"\"127.0.0.1:1\"", "\"" + (*cluster)->coordinator_address() + "\""}});
    absl::StatusOr<testing::CommandResult> r = testing::RunCommand(
        {kCairnctl, "--config", job_file, "checkpoint", "--wait", "20s"});
    REQUIRE(r.ok());
    INFO(r->output());
    CHECK(r->exit_code == 0);
    CHECK(r->output().find("checkpoint complete at clock") != std::string::npos);
  }

  // The forged push itself, sent with the worker's certificate, applies.
  const grpc::Status s = SendPush(
      forged.primary_address, TlsWith(ca, certs + "/worker.pem", certs + "/worker.key"),
      forged.request);
  INFO(s.error_message());
  CHECK(s.ok());
  const std::vector<float> after = Snapshot(*worker);
  CHECK(after != before);
  CHECK(after[kDense + kForgedKey * kWidth] == -1.0f);
  CHECK(worker->Finish().ok());

  // A daemon holding a certificate it cannot serve with stops at its start
  // with exit 2, configuration (not 4, which schedulers retry), naming the
  // file: of another role (a coordinator's would pass every check of its
  // own and fail only its checkpoints, the job's last included), or from
  // another CA (every peer would refuse it).
  const struct {
    const char* binary;
    std::string cert;
    std::string says;
  } wrong_certificates[] = {
      {"cairn-server", certs + "/worker",
       "is of role worker; this process runs as server and needs a certificate of that role"},
      {"cairn-coordinator", certs + "/worker",
       "is of role worker; this process runs as coordinator and needs a certificate of that "
       "role"},
      {"cairn-server", dir + "/other/server",
       "/other/server.pem does not chain to a CA in security.ca_file"},
  };
  for (const auto& w : wrong_certificates) {
    std::vector<std::string> args = {"--config", (*cluster)->config_path(), "--tls-cert",
                                     w.cert + ".pem", "--tls-key", w.cert + ".key"};
    if (std::string(w.binary) == "cairn-server") {
      args.insert(args.end(), {"--coordinator", (*cluster)->coordinator_address()});
    }
    args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    auto wrong = testing::Subprocess::Spawn(absl::StrCat(CAIRN_BINARY_DIR "/bin/", w.binary),
                                            args, absl::StrCat(dir, "/wrong-", w.binary, "-",
                                                               &w - wrong_certificates));
    REQUIRE(wrong.ok());
    auto ended = (*wrong)->Wait(absl::Seconds(60));
    REQUIRE(ended.ok());
    const std::string err = (*wrong)->ReadStderr();
    INFO(w.binary << ": " << err);
    CHECK(ended->ToString() == "exit code 2");
    CHECK(err.find(w.says) != std::string::npos);
  }

  // No key or token in a log or a /metrics page.
  std::string seen = (*cluster)->coordinator().ReadStderr();
  for (int i = 0; i < 2; ++i) seen += (*cluster)->server(i).ReadStderr();
  for (int port : {(*cluster)->coordinator_metrics_port(), (*cluster)->server_metrics_port(0),
                   (*cluster)->server_metrics_port(1)}) {
    absl::StatusOr<std::string> page = testing::HttpGet(port, "/metrics");
    REQUIRE(page.ok());
    seen += *page;
  }
  std::vector<std::string> secrets = {ReadFile(certs + "/admin.token"), expired_token,
                                      std::string(64, 'a')};
  for (const char* role : {"worker", "server", "coordinator", "admin", "client"}) {
    for (const std::string& m : KeyMaterial(absl::StrCat(certs, "/", role, ".key"))) {
      secrets.push_back(m);
    }
  }
  int hits = 0;
  for (std::string secret : secrets) {
    secret = std::string(absl::StripAsciiWhitespace(secret));
    if (seen.find(secret) != std::string::npos) ++hits;
  }
  CHECK(secrets.size() > 8);
  CHECK(hits == 0);
}

// Field case C12, with the certificates many sites issue: DNS names only.
TEST_CASE("C12: a server that would advertise an address its certificate does not name fails "
          "at start, saying what to set, and one advertising a name it carries trains",
          "[integration][security][cases]") {
  const std::string dir = CertDir();
  const std::string certs = dir + "/dns_only";
  RunOrFail({kCairnCerts, certs, "--dns-only", "--ca-from", dir + "/job"});
  // Every process at "localhost", a name the certificates carry.
  auto cluster = TestCluster::Start("security_c12", JobYaml(certs, dir + "/c12_checkpoints"), 0,
                                    {}, "localhost");
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  // (a) A server listening on and advertising 127.0.0.1.
  const absl::Status refused = (*cluster)->StartServer({}, {}, "127.0.0.1");
  CHECK_FALSE(refused.ok());
  REQUIRE((*cluster)->num_servers() == 1);
  const absl::StatusOr<testing::ExitStatus> ended = (*cluster)->server(0).Wait(absl::Seconds(10));
  REQUIRE(ended.ok());
  CHECK(ended->code == 2);
  const std::string err = (*cluster)->server(0).ReadStderr();
  INFO(err);
  CHECK(err.find("peers would dial this process at 127.0.0.1 (--advertise, "
                 "CAIRN_ADVERTISE_HOST, else the --listen host), but its certificate") !=
        std::string::npos);
  CHECK(err.find("names [DNS:localhost") != std::string::npos);
  CHECK(err.find("tools/cairn-certs DIR --hosts 127.0.0.1") != std::string::npos);
  // (b) Two servers at "localhost": 5 steps through them.
  REQUIRE((*cluster)->StartServer().ok());
  REQUIRE((*cluster)->StartServer().ok());
  std::unique_ptr<Client> worker = ConnectWorker(**cluster);
  const std::vector<float> ones(kDense, 1.0f);
  for (int step = 0; step < 5; ++step) {
    const absl::Status s = worker->PushDense({{"w", ones}}).get();
    INFO(s.message());
    REQUIRE(s.ok());
    REQUIRE(worker->Clock().ok());
  }
  std::vector<float> w(kDense);
  REQUIRE(worker->PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  CHECK(w[0] == -5.0f);
  CHECK(worker->Finish().ok());
}

// The PEM certificate a server presents to a new connection.
std::string PresentedCertificate(const std::string& address, const std::string& certs) {
  auto stub = v1::ParameterService::NewStub(grpc::CreateChannel(
      address, TlsWith(certs + "/ca.pem", certs + "/worker.pem", certs + "/worker.key")));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  v1::StatsResponse stats;
  if (!stub->Stats(&context, v1::StatsRequest(), &stats).ok()) return "";
  for (const grpc::string_ref& v :
       context.auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
    return std::string(v.data(), v.size());
  }
  return "";
}

// The first certificate in a PEM text (the leaf of a chain).
std::string FirstCertificate(const std::string& pem) {
  const std::string kEnd = "-----END CERTIFICATE-----";
  const size_t begin = pem.find("-----BEGIN CERTIFICATE-----");
  const size_t end = pem.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return pem.substr(begin, end + kEnd.size() - begin);
}

// The certificate the HTTPS /metrics on 127.0.0.1:`port` presents, as
// openssl s_client prints it; "" when the handshake fails.
std::string MetricsCertificate(int port) {
  absl::StatusOr<testing::CommandResult> r = testing::RunCommand(
      {"/usr/bin/openssl", "s_client", "-connect", absl::StrCat("127.0.0.1:", port)});
  if (!r.ok()) return "";
  return FirstCertificate(r->out);
}

// Runs Debian's Prometheus against `targets` (host:port) with scheme https
// and the job's CA file, and waits until every target is up. "" when they
// are, else what Prometheus reported of them last.
std::string PrometheusScrapesOverTls(const std::string& dir, const std::string& ca,
                                     const std::vector<std::string>& targets) {
  std::string list;
  for (const std::string& t : targets) absl::StrAppend(&list, list.empty() ? "" : ", ", "\"", t, "\"");
  std::ofstream(dir + "/prometheus.yml") << "global: {scrape_interval: 1s}\n"
                                         << "scrape_configs:\n"
                                         << "  - job_name: cairn\n"
                                         << "    scheme: https\n"
                                         << "    tls_config: {ca_file: \"" << ca << "\"}\n"
                                         << "    static_configs: [{targets: [" << list << "]}]\n";
  const absl::StatusOr<int> free_port = testing::FreeLoopbackPort();
  REQUIRE(free_port.ok());
  const int port = *free_port;
  auto prometheus = testing::Subprocess::Spawn(
      testing::kPrometheus,
      {"--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/tsdb",
       absl::StrCat("--web.listen-address=127.0.0.1:", port), "--log.level=warn"},
      dir + "/prometheus");
  REQUIRE(prometheus.ok());
  std::string last = "Prometheus never answered";
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(500));
    absl::StatusOr<std::string> page = testing::HttpGet(port, "/api/v1/targets?state=active");
    if (!page.ok()) continue;
    last = *page;
    size_t up = 0;
    for (size_t at = page->find("\"health\":\"up\""); at != std::string::npos;
         at = page->find("\"health\":\"up\"", at + 1)) {
      ++up;
    }
    if (up == targets.size()) return "";
  }
  return last;
}

void ReplaceAtomically(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to + ".new", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(to + ".new", to);
}

TEST_CASE("TLS: a server certificate replaced mid-job is presented to new connections, "
          "without a restart, while the job goes on",
          "[integration][security]") {
  const std::string dir = CertDir();
  const std::string certs = dir + "/rotating";
  RunOrFail({kCairnCerts, certs, "--ca-from", dir + "/job"});
  // /metrics over HTTPS too (metrics.tls), with the same certificates.
  auto cluster = TestCluster::Start(
      "security_rotation", JobYaml(certs, dir + "/rot_checkpoints", "1s", /*metrics_tls=*/true),
      2);
  INFO(cluster.status().message());
  REQUIRE(cluster.ok());
  std::unique_ptr<Client> worker = ConnectWorker(**cluster);
  const std::vector<float> ones(kDense, 1.0f);
  REQUIRE(worker->PushDense({{"w", ones}}).get().ok());
  const std::string address = (*cluster)->server_address(0);
  const std::string old_pem = ReadFile(certs + "/server.pem");
  REQUIRE(PresentedCertificate(address, certs) == old_pem);

  // A real Prometheus scrapes every daemon over HTTPS with the job's CA;
  // a plaintext scrape gets nothing.
  const int metrics_port = (*cluster)->server_metrics_port(0);
  std::vector<std::string> targets;
  for (int port : {(*cluster)->coordinator_metrics_port(), metrics_port,
                   (*cluster)->server_metrics_port(1)}) {
    targets.push_back(absl::StrCat("127.0.0.1:", port));
    CHECK_FALSE(testing::HttpGet(port, "/metrics").ok());
  }
  CHECK(PrometheusScrapesOverTls(dir, certs + "/ca.pem", targets) == "");
  // A second process given a port that /metrics serves over HTTPS stops at
  // its start (exit 3) rather than share the port and half its scrapes.
  {
    auto clash = testing::Subprocess::Spawn(
        CAIRN_BINARY_DIR "/bin/cairn-coordinator",
        {"--config", (*cluster)->config_path(), "--listen", "127.0.0.1:0", "--metrics-port",
         absl::StrCat(metrics_port)},
        dir + "/metrics-clash");
    REQUIRE(clash.ok());
    auto ended = (*clash)->Wait(absl::Seconds(30));
    REQUIRE(ended.ok());
    INFO((*clash)->ReadStderr());
    CHECK(ended->ToString() == "exit code 3");
    CHECK_THAT((*clash)->ReadStderr(),
               Catch::Contains(absl::StrCat("cannot serve /metrics over TLS on 127.0.0.1:",
                                            metrics_port, ": cannot bind (is the port taken?)")));
  }
  CHECK(MetricsCertificate(metrics_port) == FirstCertificate(old_pem));

  // New server certificates from the same CA, moved into place.
  RunOrFail({kCairnCerts, dir + "/renewed", "--ca-from", dir + "/job", "--roles", "server"});
  const std::string new_pem = ReadFile(dir + "/renewed/server.pem");
  REQUIRE(new_pem != old_pem);
  ReplaceAtomically(dir + "/renewed/server.key", certs + "/server.key");
  ReplaceAtomically(dir + "/renewed/server.pem", certs + "/server.pem");
  std::string presented;
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  int step = 1;
  while (absl::Now() < give_up) {
    // The job trains through the change.
    const absl::Status s = worker->PushDense({{"w", ones}}).get();
    INFO(s.message());
    REQUIRE(s.ok());
    ++step;
    presented = PresentedCertificate(address, certs);
    if (presented == new_pem) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  CHECK(presented == new_pem);
  // /metrics reads the files at each handshake.
  CHECK(MetricsCertificate(metrics_port) == FirstCertificate(new_pem));
  CHECK_THAT((*cluster)->server(0).ReadStderr(),
             Catch::Contains("TLS: new connections now use the certificate in " + certs +
                             "/server.pem"));

  // A slip mid-rotation: a key that does not belong to the certificate, then
  // a CA bundle cut short, moved into place. The server keeps the files it
  // read before and says why; new connections still work.
  ReplaceAtomically(dir + "/job/client.key", certs + "/server.key");
  const std::string says_key = "TLS: keeping the certificate, key and CA read before: "
                               "security.key_file: the private key in " +
                               certs + "/server.key does not belong to the certificate in " +
                               certs + "/server.pem";
  CHECK((*cluster)->server(0).WaitForStderr(says_key, absl::Seconds(20)).ok());
  absl::SleepFor(absl::Seconds(2));  // past gRPC's next look at its copies
  CHECK(PresentedCertificate(address, certs) == new_pem);
  ReplaceAtomically(dir + "/renewed/server.key", certs + "/server.key");
  {
    std::ofstream cut(certs + "/ca.pem.new");
    cut << "-----BEGIN CERTIFICATE-----\n";
  }
  std::filesystem::rename(certs + "/ca.pem.new", certs + "/ca.pem");
  const std::string says_ca = "TLS: keeping the certificate, key and CA read before: "
                              "security.ca_file: " +
                              certs + "/ca.pem holds no PEM certificate";
  CHECK((*cluster)->server(0).WaitForStderr(says_ca, absl::Seconds(20)).ok());
  absl::SleepFor(absl::Seconds(2));
  CHECK(PresentedCertificate(address, dir + "/job") == new_pem);

  // A matching pair of another role (the worker's): refused for gRPC and
  // for /metrics alike.
  ReplaceAtomically(dir + "/job/ca.pem", certs + "/ca.pem");
  ReplaceAtomically(dir + "/job/worker.key", certs + "/server.key");
  ReplaceAtomically(dir + "/job/worker.pem", certs + "/server.pem");
  const std::string says_role = "/server.pem (CN=cairn-worker,OU=worker,O=cairn) is of role worker";
  CHECK((*cluster)->server(0).WaitForStderr(says_role, absl::Seconds(20)).ok());
  absl::SleepFor(absl::Seconds(2));
  CHECK(PresentedCertificate(address, dir + "/job") == new_pem);
  CHECK(MetricsCertificate(metrics_port) == FirstCertificate(new_pem));
  for (int i = 0; i < 3; ++i, ++step) REQUIRE(worker->PushDense({{"w", ones}}).get().ok());
  std::vector<float> w(kDense);
  REQUIRE(worker->PullDense({{"w", absl::MakeSpan(w)}}).get().ok());
  CHECK(w[0] == -static_cast<float>(step));
  CHECK(worker->Finish().ok());
}

}  // namespace
}  // namespace cairn
