// cairn-launch end to end: real coordinator, servers and workers started from
// a job file; the launcher must report the result, fail fast when a process
// fails, and leave no process behind on any path (success, failure, SIGTERM,
// SIGKILL of the launcher itself).
#include <signal.h>
#include <sys/types.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/cpu_affinity.h"
#include "tests/integration/launch_jobs.h"
#include "tests/testing/process.h"
#include "tools/launch/worker_cpus.h"

namespace cairn {
namespace {

using testing::Subprocess;

constexpr char kLaunch[] = CAIRN_BINARY_DIR "/bin/cairn-launch";

std::string NewDir(const std::string& prefix) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir(prefix);
  REQUIRE(dir.ok());
  return *dir;
}

std::string WriteJob(const std::string& dir, const std::string& yaml) {
  const std::string path = dir + "/job.yaml";
  REQUIRE(testing::WriteFile(path, yaml).ok());
  return path;
}

std::unique_ptr<Subprocess> StartLaunch(const std::string& dir,
                                        const std::vector<std::string>& args) {
  auto launch = Subprocess::Spawn(kLaunch, args, dir + "/launch");
  REQUIRE(launch.ok());
  return *std::move(launch);
}

// The processes the launcher reported starting: its "[launch] started
// <name> pid=<N>: ..." lines, name -> pid.
std::map<std::string, pid_t> StartedPids(const std::string& log) {
  std::map<std::string, pid_t> pids;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::ConsumePrefix(&line, "[launch] started ")) continue;
    const size_t at = line.find(" pid=");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 5);
    int pid = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find(':')), &pid)) {
      pids[std::string(line.substr(0, at))] = pid;
    }
  }
  return pids;
}

// True while `pid` is a running (not zombie) process whose command line names
// a cairn binary; a pid reused by something else does not count.
bool CairnProcessRunning(pid_t pid) {
  const std::string cmdline = testing::ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline"));
  return absl::StrContains(cmdline, "cairn-");  // a zombie's cmdline is empty
}

// Waits up to `timeout` for every process in `pids` to be gone; returns
// those still running.
std::vector<std::string> Survivors(const std::map<std::string, pid_t>& pids,
                                   absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<std::string> alive;
    for (const auto& [name, pid] : pids) {
      if (CairnProcessRunning(pid)) alive.push_back(absl::StrCat(name, " pid=", pid));
    }
    if (alive.empty() || absl::Now() >= deadline) return alive;
    absl::SleepFor(absl::Milliseconds(50));
  }
}

// Waits until the job passed its start-up barrier (every worker registered),
// then kills `name` (a "[launch] started" name) with SIGKILL.
void KillOnceTraining(Subprocess& launch, const std::string& name) {
  REQUIRE(launch.WaitForStderr("start-up barrier passed", absl::Seconds(60)).ok());
  std::map<std::string, pid_t> pids = StartedPids(launch.ReadStderr());
  REQUIRE(pids.count(name) == 1);
  REQUIRE(::kill(pids[name], SIGKILL) == 0);
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

TEST_CASE("launch runs a small BSP job to the end, reports it and leaves no process",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_ok");
  const std::string job = WriteJob(dir, TinyJob());
  const std::string summary_path = dir + "/summary.json";
  // "--trace-loss 60" after "--" reaches every worker: their summaries then
  // carry every step's loss.
  auto launch = StartLaunch(dir, {job, "--summary", summary_path, "--workdir", dir + "/jobdir",
                                  "--", "--trace-loss", "60"});
  auto ended = launch->Wait(absl::Minutes(4));
  REQUIRE(ended.ok());
  INFO("launcher stderr:\n" << launch->ReadStderr());
  REQUIRE(ended->code == 0);

  const std::map<std::string, pid_t> pids = StartedPids(launch->ReadStderr());
  CHECK(pids.size() == 5);
  for (const char* name : {"coordinator", "server 0", "server 1", "worker 0", "worker 1"}) {
    CHECK(pids.count(name) == 1);
  }
  CHECK(Survivors(pids, absl::ZeroDuration()).empty());

  std::ifstream in(summary_path);
  REQUIRE(in.good());
  const nlohmann::json summary = nlohmann::json::parse(in);
  CHECK(summary["servers"] == 2);
  CHECK(summary["workers"] == 2);
  CHECK(summary["steps"] == 60);  // max_steps caps each worker's steps
  CHECK(summary["epochs"] == 1);
  // Fashion-MNIST has 10 classes (chance is 0.1); 60 BSP steps of this MLP
  // reach well above 0.5.
  CHECK(summary["test_accuracy"].get<double>() > 0.5);
  CHECK(summary["test_accuracy"].get<double>() <= 1.0);
  CHECK(summary["wall_seconds"].get<double>() > 0);
  REQUIRE(summary["per_worker"].size() == 2);
  // Each worker ran on CPUs of its own (all of them on a one-CPU machine).
  const std::vector<int> allowed = AllowedCpus();
  const std::vector<std::vector<int>> pinned = launch::SplitCpusAmongWorkers(allowed, 2);
  double throughput = 0;
  for (int w = 0; w < 2; ++w) {
    const nlohmann::json& worker = summary["per_worker"][w];
    CHECK(worker["worker"] == w);
    CHECK(worker["cpus"] == FormatCpuList(pinned.empty() ? allowed : pinned[w]));
    throughput += worker["examples_per_second"].get<double>();
    // Both workers evaluate the same model after the same last BSP step.
    CHECK(worker["test_accuracy"].get<double>() ==
          Approx(summary["test_accuracy"].get<double>()).margin(1e-9));
    const std::vector<double> losses = worker["loss_trace"].get<std::vector<double>>();
    REQUIRE(losses.size() == 60);
    // Training works: the last ten steps' mean loss is well below the first
    // ten's (it starts near ln(10) = 2.30).
    CHECK(Mean({losses.end() - 10, losses.end()}) <
          0.8 * Mean({losses.begin(), losses.begin() + 10}));
  }
  CHECK(summary["examples_per_second"].get<double>() == Approx(throughput).epsilon(1e-12));
  CHECK(summary["metrics"].size() == 5);

  const std::string out = launch->ReadStdout();
  CHECK(absl::StrContains(out, "test accuracy: "));
  CHECK(absl::StrContains(out, "each process's /metrics while the job ran (now stopped):\n"));
  for (const char* name : {"coordinator", "server 0", "server 1", "worker 0", "worker 1"}) {
    CHECK(absl::StrContains(out, absl::StrCat("metrics ", name, ": http://127.0.0.1:")));
  }
  // Children's lines come through with their name.
  const std::string err = launch->ReadStderr();
  CHECK(absl::StrContains(err, "[coordinator] "));
  CHECK(absl::StrContains(err, "[server 1] "));
  CHECK(absl::StrContains(err, "[worker 1] "));
  // rpc.busy_poll: auto became 2ms for every process, servers and workers.
  CHECK(absl::StrContains(err, "[launch] rpc.busy_poll: auto -> 2ms"));
  const auto count = [&err](const std::string& text) {
    size_t n = 0;
    for (size_t at = err.find(text); at != std::string::npos; at = err.find(text, at + 1)) ++n;
    return n;
  };
  // Each server, polling on one thread, also polls its workers' call slots.
  CHECK(count("(max message 268435456 bytes, busy polling 2ms, call slots polled)") == 2);
  CHECK(count("(busy polling 2ms)") == 2);  // each worker
  // One config hash for the whole job: the launcher's (its rpc.busy_poll
  // included), the coordinator's and each worker's (their --coordinator and
  // --metrics-port say where they are, not how the job runs), the summary's.
  const std::string launched = "(config hash ";
  const size_t at = err.find(launched);
  REQUIRE(at != std::string::npos);
  const std::string hash = err.substr(at + launched.size(), 16);
  CHECK(summary["config_hash"] == hash);
  CHECK(count("config.hash: " + hash + "\n") == 1);  // the coordinator's effective config
  CHECK(count("(hash " + hash + "): cluster mode") == 2);
}

TEST_CASE("launch --tls runs the job over mutual TLS with certificates made for it, and no "
          "key or token reaches its output or summaries",
          "[integration][launch][security]") {
  const std::string dir = NewDir("launch_tls");
  const std::string job = WriteJob(dir, TinyJob(30));
  const std::string workdir = dir + "/jobdir";
  // /metrics over HTTPS without TLS: refused before anything starts.
  {
    auto refused = StartLaunch(dir, {job, "--workdir", dir + "/refused", "--set",
                                     "metrics.tls=true"});
    auto code = refused->Wait(absl::Minutes(1));
    REQUIRE(code.ok());
    CHECK(code->code == 2);
    CHECK(absl::StrContains(refused->ReadStderr(),
                            "metrics.tls: true serves /metrics with each process's TLS "
                            "certificate, but TLS is off: add --tls"));
  }
  auto launch = StartLaunch(dir, {job, "--tls", "--set", "metrics.tls=true", "--workdir", workdir,
                                  "--summary", dir + "/summary.json"});
  auto ended = launch->Wait(absl::Minutes(4));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  REQUIRE(ended->code == 0);
  // Every process's /metrics, reported with the scheme it is served with.
  const std::string out = launch->ReadStdout() + err;
  for (const char* name : {"coordinator", "worker 0", "worker 1"}) {
    CHECK(absl::StrContains(out, absl::StrCat("metrics ", name, ": https://")));
  }
  CHECK_FALSE(absl::StrContains(out, "(not reported)"));
  for (const char* name : {"coordinator", "server 0", "server 1", "worker 0", "worker 1"}) {
    CHECK(absl::StrContains(err, absl::StrCat("[", name, "] ")));
  }
  // Each process ran with its role's certificate.
  for (const char* role : {"coordinator", "server", "worker"}) {
    CHECK(absl::StrContains(err, absl::StrCat("TLS on: certificate ", workdir, "/certs/", role,
                                              ".pem (CN=cairn-", role, ",OU=", role)));
  }
  // The coordinator's effective config shows the TLS its flags turned on.
  CHECK(absl::StrContains(err, "config: security.tls: true\n"));
  CHECK(absl::StrContains(err, absl::StrCat("config: security.cert_file: ", workdir,
                                            "/certs/coordinator.pem\n")));
  std::ifstream in(dir + "/summary.json");
  REQUIRE(in.good());
  const nlohmann::json summary = nlohmann::json::parse(in);
  CHECK(summary["steps"] == 30);
  CHECK(summary["test_accuracy"].get<double>() > 0.4);

  // Secrets: the admin token and each key's base64 lines.
  std::string seen = err + launch->ReadStdout() + summary.dump();
  for (const char* w : {"/worker-0.json", "/worker-1.json"}) {
    std::ifstream f(workdir + w);
    std::stringstream text;
    text << f.rdbuf();
    seen += text.str();
  }
  std::vector<std::string> secrets;
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  };
  secrets.push_back(std::string(absl::StripAsciiWhitespace(read(workdir + "/certs/admin.token"))));
  for (const char* role : {"worker", "server", "coordinator", "admin", "client", "ca"}) {
    for (absl::string_view line :
         absl::StrSplit(read(absl::StrCat(workdir, "/certs/", role, ".key")), '\n')) {
      if (line.size() >= 32 && !absl::StrContains(line, "-----")) secrets.emplace_back(line);
    }
  }
  REQUIRE(secrets.size() > 6);
  int hits = 0;
  for (const std::string& s : secrets) hits += absl::StrContains(seen, s) ? 1 : 0;
  CHECK(hits == 0);
}

TEST_CASE("launch stops the job and names the worker when a worker fails",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_fail");
  const std::string job = WriteJob(dir, TinyJob());
  const absl::Time start = absl::Now();
  auto launch = StartLaunch(dir, {job, "--set", "training.data_dir=/nonexistent"});
  auto ended = launch->Wait(absl::Seconds(60));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  CHECK(ended->code == 1);
  // The workers fail while loading data, long before any timeout.
  CHECK(absl::Now() - start < absl::Seconds(30));
  CHECK(absl::StrContains(err, "job failed: worker "));
  // The worker's own message, passed through with its prefix.
  CHECK(absl::StrContains(err, "cairn-worker: training.data_dir: /nonexistent/"));
  const std::map<std::string, pid_t> pids = StartedPids(err);
  CHECK(pids.count("coordinator") == 1);
  CHECK(Survivors(pids, absl::ZeroDuration()).empty());
  // Without --workdir the launcher used a temporary directory and removed it.
  const size_t at = err.find("work directory ");
  REQUIRE(at != std::string::npos);
  const std::string workdir = err.substr(at + 15, err.find('\n', at) - at - 15);
  CHECK(absl::StrContains(workdir, "cairn-launch."));
  CHECK_FALSE(std::filesystem::exists(workdir));
}

TEST_CASE("under on_worker_loss: continue a killed worker is reported and the job finishes",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_worker_lost");
  // 150 BSP steps; the worker is killed once both have registered.
  const std::string job = WriteJob(dir, TinyJob(/*max_steps=*/150));
  const std::string summary_path = dir + "/summary.json";
  auto launch = StartLaunch(dir, {job, "--summary", summary_path,
                                  "--set", "cluster.on_worker_loss=continue"});
  KillOnceTraining(*launch, "worker 1");
  auto ended = launch->Wait(absl::Minutes(3));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  CHECK(ended->code == 0);
  CHECK(absl::StrContains(err, "[launch] worker 1 failed (killed by signal 9"));
  CHECK(absl::StrContains(err, "the job goes on without it (cluster.on_worker_loss: continue)"));
  // The coordinator declared it lost when its lease ran out, and worker 0
  // went on alone to the end.
  CHECK(absl::StrContains(err, "worker 1 lost at clock "));
  CHECK(absl::StrContains(err, "[launch] worker 0 finished (exit code 0)"));
  CHECK(Survivors(StartedPids(err), absl::ZeroDuration()).empty());

  std::ifstream in(summary_path);
  REQUIRE(in.good());
  const nlohmann::json summary = nlohmann::json::parse(in);
  CHECK(summary["workers"] == 2);
  CHECK(summary["workers_lost"] == nlohmann::json::array({1}));
  REQUIRE(summary["per_worker"].size() == 1);
  CHECK(summary["per_worker"][0]["worker"] == 0);
  CHECK(summary["steps"] == 150);
  CHECK(summary["test_accuracy"].get<double>() > 0.5);
  const std::string out = launch->ReadStdout();
  CHECK(absl::StrContains(out, "test accuracy: "));
  CHECK(absl::StrContains(out, "(mean of 1 workers)"));
  CHECK(absl::StrContains(out, "workers lost: worker 1 (the job went on without them"));
}

TEST_CASE("under on_worker_loss: fail a killed worker fails the job at once",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_worker_fail");
  const std::string job = WriteJob(dir, TinyJob(/*max_steps=*/0, /*epochs=*/5));
  auto launch = StartLaunch(dir, {job, "--set", "cluster.on_worker_loss=fail"});
  KillOnceTraining(*launch, "worker 1");
  auto ended = launch->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  CHECK(ended->code == 1);
  CHECK(absl::StrContains(err, "job failed: worker 1 ended with killed by signal 9"));
  CHECK(Survivors(StartedPids(err), absl::ZeroDuration()).empty());
}

TEST_CASE("launch stops the job and names the server when a server dies",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_server_dies");
  const std::string job = WriteJob(dir, TinyJob(/*max_steps=*/0, /*epochs=*/5));
  auto launch = StartLaunch(dir, {job});
  REQUIRE(launch->WaitForStderr("[launch] started worker 1", absl::Seconds(60)).ok());
  std::map<std::string, pid_t> pids = StartedPids(launch->ReadStderr());
  REQUIRE(pids.count("server 0") == 1);
  REQUIRE(::kill(pids["server 0"], SIGKILL) == 0);
  auto ended = launch->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  CHECK(ended->code == 1);
  CHECK(absl::StrContains(err, "job failed: server 0 ended with killed by signal 9"));
  CHECK(Survivors(StartedPids(err), absl::ZeroDuration()).empty());
}

TEST_CASE("launch --no-workers brings the cluster up, prints metrics URLs and stops it",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_noworkers");
  const std::string job = WriteJob(dir, TinyJob());
  // A busy_poll the user set is passed on as it is, not chosen for them.
  auto launch = StartLaunch(dir, {"--no-workers", job, "--set", "rpc.busy_poll=0s"});
  auto ended = launch->Wait(absl::Seconds(60));
  REQUIRE(ended.ok());
  INFO("launcher stderr:\n" << launch->ReadStderr());
  CHECK(ended->code == 0);
  CHECK_FALSE(absl::StrContains(launch->ReadStderr(), "rpc.busy_poll: auto"));
  CHECK(absl::StrContains(launch->ReadStderr(), "busy polling off"));
  const std::string out = launch->ReadStdout();
  for (const char* name : {"coordinator", "server 0", "server 1"}) {
    CHECK(absl::StrContains(out, absl::StrCat("metrics ", name, ": http://127.0.0.1:")));
  }
  const std::map<std::string, pid_t> pids = StartedPids(launch->ReadStderr());
  CHECK(pids.size() == 3);
  CHECK(Survivors(pids, absl::ZeroDuration()).empty());
}

TEST_CASE("launch --coordinator-port puts the coordinator where cairnctl is told to look",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_coordinator_port");
  const std::string job = WriteJob(dir, TinyJob());
  const absl::StatusOr<int> free_port = testing::FreeLoopbackPort();
  REQUIRE(free_port.ok());
  const int port = *free_port;
  auto launch = StartLaunch(dir, {"--no-workers", "--coordinator-port", absl::StrCat(port), job});
  auto ended = launch->Wait(absl::Seconds(60));
  REQUIRE(ended.ok());
  const std::string err = launch->ReadStderr();
  INFO("launcher stderr:\n" << err);
  CHECK(ended->code == 0);
  CHECK(absl::StrContains(err, absl::StrCat("--listen 127.0.0.1:", port, " ")));
  CHECK(absl::StrContains(err, absl::StrCat("cluster is up: coordinator on 127.0.0.1:", port,
                                            ", 2 servers serving (cairnctl --coordinator "
                                            "127.0.0.1:", port, " status)")));
  // A port out of range is refused before anything starts.
  auto bad = StartLaunch(dir, {"--no-workers", "--coordinator-port", "70000", job});
  auto refused = bad->Wait(absl::Seconds(30));
  REQUIRE(refused.ok());
  CHECK(refused->code == 2);
  CHECK(absl::StrContains(bad->ReadStderr(), "--coordinator-port"));
  CHECK(StartedPids(bad->ReadStderr()).empty());
}

TEST_CASE("launch stops every process when it gets SIGTERM", "[integration][launch]") {
  const std::string dir = NewDir("launch_sigterm");
  const std::string job = WriteJob(dir, TinyJob(/*max_steps=*/0, /*epochs=*/5));
  auto launch = StartLaunch(dir, {job});
  REQUIRE(launch->WaitForStderr("[launch] started worker 1", absl::Seconds(60)).ok());
  REQUIRE(launch->Signal(SIGTERM).ok());
  auto ended = launch->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  INFO("launcher stderr:\n" << launch->ReadStderr());
  CHECK(ended->code == 128 + SIGTERM);
  const std::map<std::string, pid_t> pids = StartedPids(launch->ReadStderr());
  CHECK(pids.size() == 5);
  CHECK(Survivors(pids, absl::ZeroDuration()).empty());
}

TEST_CASE("the launcher's children die with it when it is SIGKILLed", "[integration][launch]") {
  const std::string dir = NewDir("launch_sigkill");
  const std::string job = WriteJob(dir, TinyJob(/*max_steps=*/0, /*epochs=*/5));
  // A SIGKILLed launcher cannot remove a temporary work directory; keep it here.
  auto launch = StartLaunch(dir, {job, "--workdir", dir + "/jobdir"});
  REQUIRE(launch->WaitForStderr("[launch] started worker 1", absl::Seconds(60)).ok());
  const std::map<std::string, pid_t> pids = StartedPids(launch->ReadStderr());
  REQUIRE(pids.size() == 5);
  launch->Kill();
  // PR_SET_PDEATHSIG delivers SIGKILL to each child as the launcher dies.
  CHECK(Survivors(pids, absl::Seconds(10)).empty());
}

TEST_CASE("launch rejects a bad job file with its location and exit code 2",
          "[integration][launch]") {
  const std::string dir = NewDir("launch_badyaml");
  const std::string job = WriteJob(dir, "cluster:\n  servers: 2\n  workerz: 2\n");
  auto launch = StartLaunch(dir, {job});
  auto ended = launch->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->code == 2);
  CHECK(absl::StrContains(launch->ReadStderr(), job + ":3:3: unknown key `cluster.workerz`"));
  CHECK(StartedPids(launch->ReadStderr()).empty());
}

TEST_CASE("launch names the missing binary and exits 2", "[integration][launch]") {
  const std::string dir = NewDir("launch_nobin");
  const std::string job = WriteJob(dir, TinyJob());
  std::filesystem::create_directory(dir + "/empty");
  auto launch = StartLaunch(dir, {job, "--bin-dir", dir + "/empty"});
  auto ended = launch->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->code == 2);
  CHECK(absl::StrContains(launch->ReadStderr(), dir + "/empty/cairn-coordinator"));
}

}  // namespace
}  // namespace cairn
