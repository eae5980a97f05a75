// cairn-launch's observability end to end: the file_sd targets it writes,
// `--prometheus` (Debian's Prometheus scraping the running job, queried
// through its HTTP API while the job trains, and stopped with the job, or
// with `--prometheus-keep` kept after it), and `--plot` (training curves
// drawn by gnuplot).
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/testing/http_get.h"
#include "tests/integration/launch_jobs.h"
#include "tests/testing/process.h"

namespace cairn {
namespace {

using testing::Subprocess;

constexpr char kLaunch[] = CAIRN_BINARY_DIR "/bin/cairn-launch";
constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kGnuplot[] = "/usr/bin/gnuplot";

std::string NewJobDir(const std::string& prefix, int epochs) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir(prefix);
  REQUIRE(dir.ok());
  REQUIRE(testing::WriteFile(*dir + "/job.yaml", TinyJob(/*max_steps=*/0, epochs)).ok());
  return *dir;
}

bool Installed(const char* path) { return ::access(path, X_OK) == 0; }

// name -> pid from the launcher's "[launch] started <name> pid=<N>: ..." lines.
std::map<std::string, pid_t> StartedPids(const std::string& log) {
  std::map<std::string, pid_t> pids;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::ConsumePrefix(&line, "[launch] started ")) continue;
    const size_t at = line.find(" pid=");
    int pid = 0;
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 5, line.find(':') - at - 5), &pid)) {
      pids[std::string(line.substr(0, at))] = pid;
    }
  }
  return pids;
}

// True while `pid` runs (not a zombie) with `word` in its command line.
bool Running(pid_t pid, const std::string& word) {
  return absl::StrContains(testing::ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline")),
                           word);
}

std::string PercentEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrCat("%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

// The single value of an instant query on Prometheus at `port`; -1 when
// the query fails or does not return exactly one series.
double Scalar(int port, const std::string& promql) {
  absl::StatusOr<std::string> body = testing::HttpGet(
      "127.0.0.1", port, "/api/v1/query?query=" + PercentEncode(promql), absl::Seconds(5));
  if (!body.ok()) return -1;
  const nlohmann::json r = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (!r.is_object() || r["status"] != "success" || r["data"]["result"].size() != 1) return -1;
  return std::stod(r["data"]["result"][0]["value"][1].get<std::string>());
}

// Polls `promql` until its value satisfies `ok` (returned) or `wait` passes
// (the last value is returned).
template <typename Ok>
double WaitFor(int port, const std::string& promql, Ok ok, absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  double value = Scalar(port, promql);
  while (!ok(value) && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    value = Scalar(port, promql);
  }
  INFO(promql << " = " << value);
  return value;
}

// Runs the launcher on `dir`'s job with `flags`, checks that it refused them
// with exit code 2 before starting any process, and returns its stderr.
std::string RefusedBeforeStart(const std::string& dir, const std::vector<std::string>& flags) {
  std::vector<std::string> args = {dir + "/job.yaml"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto launch = Subprocess::Spawn(kLaunch, args, dir + "/launch");
  REQUIRE(launch.ok());
  auto ended = (*launch)->Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  const std::string err = (*launch)->ReadStderr();
  INFO(err);
  CHECK(ended->code == 2);
  CHECK(StartedPids(err).empty());
  return err;
}

constexpr char kPrometheusLine[] = "[launch] prometheus on http://127.0.0.1:";

// The port of the Prometheus the launcher started, from its
// "[launch] prometheus on http://127.0.0.1:PORT/" line in `err`.
int PrometheusPort(const std::string& err) {
  const size_t at = err.find(kPrometheusLine);
  REQUIRE(at != std::string::npos);
  const absl::string_view url = absl::string_view(err).substr(at + strlen(kPrometheusLine));
  int port = 0;
  REQUIRE(absl::SimpleAtoi(url.substr(0, url.find('/')), &port));
  return port;
}

// Waits until `launcher` has started Prometheus and the job's last worker;
// returns its stderr so far.
std::string WaitForTraining(Subprocess& launcher) {
  REQUIRE(launcher.WaitForStderr(kPrometheusLine, absl::Seconds(60)).ok());
  REQUIRE(launcher.WaitForStderr("[launch] started worker 1", absl::Seconds(60)).ok());
  return launcher.ReadStderr();
}

TEST_CASE("launch --prometheus scrapes the training job and stops with it",
          "[integration][launch][prometheus]") {
  if (!Installed(kPrometheus)) {
    FAIL(kPrometheus << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
  const std::string dir = NewJobDir("launch_prometheus", /*epochs=*/100);
  auto launch = Subprocess::Spawn(
      kLaunch, {dir + "/job.yaml", "--prometheus", "--workdir", dir + "/jobdir"}, dir + "/launch");
  REQUIRE(launch.ok());
  Subprocess& launcher = **launch;
  const std::string err = WaitForTraining(launcher);
  INFO("launcher stderr (start):\n" << err.substr(0, 8000));
  const int port = PrometheusPort(err);

  // Every process is a target with its role, and is up.
  auto positive = [](double v) { return v > 0; };
  CHECK(WaitFor(port, R"(count(up{job="cairn"} == 1))", [](double v) { return v == 5; },
                absl::Seconds(30)) == 5);
  CHECK(Scalar(port, R"(count(up{role="coordinator"}))") == 1);
  CHECK(Scalar(port, R"(count(up{role="server"}))") == 2);
  CHECK(Scalar(port, R"(count(up{role="worker"}))") == 2);
  // While training: servers receive pushes, workers make progress, and the
  // servers' vector clocks move.
  CHECK(WaitFor(port, R"(sum(rate(cairn_shard_received_bytes_total{method="Push"}[30s])))",
                positive, absl::Seconds(30)) > 0);
  CHECK(WaitFor(port, "sum(rate(cairn_worker_examples_total[30s]))", positive,
                absl::Seconds(30)) > 0);
  CHECK(WaitFor(port, "min(cairn_shard_min_clock)", positive, absl::Seconds(30)) > 0);
  CHECK(WaitFor(port, "count(cairn_shard_clock_spread)", [](double v) { return v == 2; },
                absl::Seconds(30)) == 2);
  CHECK(launcher.Running());  // 100 epochs: still training

  // The files beside the targets, as docs/metrics.md lays them out.
  const std::string prometheus_dir = dir + "/jobdir/prometheus";
  CHECK(std::filesystem::is_regular_file(prometheus_dir + "/prometheus-local.yml"));
  CHECK(std::filesystem::is_regular_file(prometheus_dir + "/alerts.yml"));
  std::ifstream in(prometheus_dir + "/targets/cairn.json");
  const nlohmann::json groups = nlohmann::json::parse(in);
  REQUIRE(groups.size() == 3);
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"coordinator", 1}, {"server", 2}, {"worker", 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(groups[i]["labels"]["job"] == "cairn");
    CHECK(groups[i]["labels"]["role"] == expected[i].first);
    CHECK(groups[i]["targets"].size() == expected[i].second);
  }

  // Stopping the job stops Prometheus too.
  const std::map<std::string, pid_t> pids = StartedPids(launcher.ReadStderr());
  REQUIRE(pids.count("prometheus") == 1);
  REQUIRE(launcher.Signal(SIGTERM).ok());
  auto ended = launcher.Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->code == 128 + SIGTERM);
  CHECK(pids.size() == 6);
  for (const auto& [name, pid] : pids) {
    INFO(name << " pid=" << pid);
    CHECK_FALSE(Running(pid, name == "prometheus" ? "prometheus" : "cairn-"));
  }
}

TEST_CASE("launch --prometheus with metrics.tls scrapes every process over HTTPS with the "
          "job's CA",
          "[integration][launch][prometheus][security]") {
  if (!Installed(kPrometheus)) {
    FAIL(kPrometheus << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
  const std::string dir = NewJobDir("launch_prometheus_https", /*epochs=*/100);
  const std::string workdir = dir + "/jobdir";
  auto launch = Subprocess::Spawn(kLaunch,
                                  {dir + "/job.yaml", "--tls", "--set", "metrics.tls=true",
                                   "--prometheus", "--workdir", workdir},
                                  dir + "/launch");
  REQUIRE(launch.ok());
  Subprocess& launcher = **launch;
  const std::string err = WaitForTraining(launcher);
  INFO("launcher stderr (start):\n" << err.substr(0, 8000));
  CHECK(absl::StrContains(err, absl::StrCat("(over HTTPS, CA file ", workdir, "/certs/ca.pem)")));
  const int port = PrometheusPort(err);

  // Every process is up, scraped over HTTPS (a plaintext scrape gets no
  // answer from them), and its series arrive.
  CHECK(WaitFor(port, R"(count(up{job="cairn"} == 1))", [](double v) { return v == 5; },
                absl::Seconds(30)) == 5);
  absl::StatusOr<std::string> targets =
      testing::HttpGet("127.0.0.1", port, "/api/v1/targets?state=active", absl::Seconds(5));
  REQUIRE(targets.ok());
  const nlohmann::json active = nlohmann::json::parse(*targets)["data"]["activeTargets"];
  REQUIRE(active.size() == 5);
  for (const nlohmann::json& t : active) {
    INFO(t.dump());
    CHECK(absl::StartsWith(t["scrapeUrl"].get<std::string>(), "https://127.0.0.1:"));
    CHECK(t["health"] == "up");
  }
  CHECK(WaitFor(port, "sum(rate(cairn_worker_examples_total[30s]))",
                [](double v) { return v > 0; }, absl::Seconds(30)) > 0);

  REQUIRE(launcher.Signal(SIGTERM).ok());
  auto ended = launcher.Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->code == 128 + SIGTERM);
}

TEST_CASE("launch --prometheus-keep keeps Prometheus and what it scraped after the job",
          "[integration][launch][prometheus]") {
  if (!Installed(kPrometheus)) {
    FAIL(kPrometheus << " is not installed: tools/setup installs it (Debian package prometheus)");
  }
  // Long enough for Prometheus (every 5 s) to scrape every process a few times.
  const std::string dir = NewJobDir("launch_prometheus_keep", /*epochs=*/15);
  auto launch = Subprocess::Spawn(kLaunch,
                                  {dir + "/job.yaml", "--prometheus", "--prometheus-keep",
                                   "--workdir", dir + "/jobdir"},
                                  dir + "/launch");
  REQUIRE(launch.ok());
  Subprocess& launcher = **launch;
  const std::string kept = "[launch] the job has ended; prometheus keeps serving what it scraped";
  const absl::Status waited = launcher.WaitForStderr(kept, absl::Minutes(4));
  const std::string err = launcher.ReadStderr();
  INFO("launcher stderr:\n" << err.substr(0, 12000));
  REQUIRE(waited.ok());
  CHECK(absl::StrContains(err, "it stays up after the job until Ctrl-C: --prometheus-keep)"));
  const int port = PrometheusPort(err);

  // The job's processes are gone; Prometheus still answers with their
  // series (their last samples: each series went stale when its target
  // stopped, so an instant query of it alone finds nothing).
  const std::map<std::string, pid_t> pids = StartedPids(err);
  REQUIRE(pids.size() == 6);
  for (const auto& [name, pid] : pids) {
    INFO(name << " pid=" << pid);
    CHECK(Running(pid, name == "prometheus" ? "prometheus" : "cairn-") == (name == "prometheus"));
  }
  CHECK(Scalar(port, R"(count(last_over_time(up{job="cairn"}[10m])))") == 5);
  CHECK(Scalar(port, "min(last_over_time(cairn_shard_min_clock[10m]))") > 0);
  // The coordinator's per-role series keep the member's role under `role`
  // (deploy/prometheus: the target's `role` would rename it), as
  // alerts.yml and the dashboard select it. (The most over the run: the
  // last scrape may come as the servers leave at the job's end.)
  CHECK(Scalar(port, R"(max_over_time(cairn_coordinator_members{role="server",)"
                     R"(state="alive"}[10m]))") == 2);
  CHECK(Scalar(port, R"(absent(last_over_time({exported_role!=""}[10m])))") == 1);  // none
  CHECK(launcher.Running());

  // Ctrl-C or SIGTERM stops it; the exit code is the job's.
  REQUIRE(launcher.Signal(SIGTERM).ok());
  auto ended = launcher.Wait(absl::Seconds(30));
  REQUIRE(ended.ok());
  CHECK(ended->code == 0);
  CHECK(absl::StrContains(launcher.ReadStdout(), "test accuracy: "));  // the job's report
  CHECK_FALSE(Running(pids.at("prometheus"), "prometheus"));
  CHECK(absl::StrContains(launcher.ReadStderr(), "[launch] stopping prometheus (signal 15)"));
}

TEST_CASE("launch with metrics.tls refuses a deploy directory whose scrape config has no cairn "
          "job, naming the file, before anything starts",
          "[integration][launch][prometheus]") {
  const std::string dir = NewJobDir("launch_https_deploy", /*epochs=*/1);
  const std::string deploy = dir + "/deploy";
  std::filesystem::create_directories(deploy + "/prometheus");
  REQUIRE(testing::WriteFile(deploy + "/prometheus/prometheus-local.yml",
                             "scrape_configs:\n  - job_name: other\n")
              .ok());
  REQUIRE(testing::WriteFile(deploy + "/prometheus/alerts.yml", "groups: []\n").ok());
  const std::string err = RefusedBeforeStart(
      dir, {"--tls", "--set", "metrics.tls=true", "--deploy-dir", deploy, "--workdir",
            dir + "/jobdir"});
  CHECK(absl::StrContains(err, deploy + "/prometheus/prometheus-local.yml has no scrape job "
                                        "named \"cairn\" under scrape_configs"));
  CHECK_FALSE(std::filesystem::exists(dir + "/jobdir/certs"));  // nothing made either
}

TEST_CASE("launch --prometheus-keep without --prometheus is refused before anything starts",
          "[integration][launch][prometheus]") {
  const std::string dir = NewJobDir("launch_keep_alone", 1);
  CHECK(absl::StrContains(RefusedBeforeStart(dir, {"--prometheus-keep"}),
                          "--prometheus-keep keeps the Prometheus of --prometheus up after the "
                          "job; add --prometheus"));
}

TEST_CASE("launch --prometheus without Prometheus installed names it and starts nothing",
          "[integration][launch][prometheus]") {
  const std::string dir = NewJobDir("launch_no_prometheus", 1);
  const std::string missing = dir + "/no-such-prometheus";
  CHECK(absl::StrContains(
      RefusedBeforeStart(dir, {"--prometheus", "--prometheus-binary", missing}),
      "--prometheus: " + missing + " is not installed (Debian package prometheus"));
}

TEST_CASE("launch --plot draws the per-epoch curves with gnuplot", "[integration][launch][plot]") {
  if (!Installed(kGnuplot)) {
    FAIL(kGnuplot << " is not installed: tools/setup installs it (Debian package gnuplot-nox)");
  }
  const std::string dir = NewJobDir("launch_plot", /*epochs=*/2);
  const std::string svg = dir + "/curves.svg";
  auto launch = Subprocess::Spawn(kLaunch, {dir + "/job.yaml", "--plot", svg, "--workdir",
                                            dir + "/jobdir"},
                                  dir + "/launch");
  REQUIRE(launch.ok());
  auto ended = (*launch)->Wait(absl::Minutes(2));
  REQUIRE(ended.ok());
  INFO("launcher stderr:\n" << (*launch)->ReadStderr());
  REQUIRE(ended->code == 0);
  CHECK(absl::StrContains((*launch)->ReadStderr(), "[launch] training curves written to " + svg));

  const std::string picture = testing::ReadFileOrEmpty(svg);
  CHECK(absl::StartsWith(picture, "<?xml"));
  CHECK(absl::StrContains(picture, "<svg"));
  CHECK(absl::StrContains(picture, "</svg>"));
  CHECK(picture.size() > 10000);  // three panels of axes, lines and keys
  // Train loss and throughput differ per worker; under BSP both workers
  // evaluate the same model, so the test curves are drawn once.
  for (const char* key : {"train, worker 0", "train, worker 1", "test, all workers",
                          "test accuracy, all workers", "examples/s, worker 1"}) {
    CHECK(absl::StrContains(picture, key));
  }
  // Its data: one line per epoch and worker, from the worker summaries.
  const std::string data = testing::ReadFileOrEmpty(dir + "/jobdir/plot/worker-1.dat");
  const std::vector<std::string> lines = absl::StrSplit(data, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 4);  // two comment lines, two epochs
  CHECK(absl::StartsWith(lines[2], "1 "));
  CHECK(absl::StartsWith(lines[3], "2 "));
}

TEST_CASE("launch --plot rejects a file that is neither .svg nor .png before starting",
          "[integration][launch][plot]") {
  const std::string dir = NewJobDir("launch_plot_bad", 1);
  CHECK(absl::StrContains(RefusedBeforeStart(dir, {"--plot", dir + "/curves.jpg"}),
                          "must end in .svg or .png"));
}

}  // namespace
}  // namespace cairn
