// The Prometheus side of a job run by cairn-launch, on disk: the file_sd
// targets of every process and a copy of the shipped scrape config and alert
// rules, laid out as deploy/prometheus/prometheus-local.yml expects
// (docs/metrics.md, "Scraping a local job"):
//
//   <workdir>/prometheus/prometheus-local.yml   copied from <deploy>/prometheus/
//   <workdir>/prometheus/alerts.yml             copied from <deploy>/prometheus/
//   <workdir>/prometheus/targets/cairn.json     written here, rewritten as processes start
//   <workdir>/prometheus/data/                  Prometheus's TSDB (--prometheus)
//
// The targets file is a list of target groups, one per role present, each
// with labels {"job": "cairn", "role": "<role>"} and the host:port of every
// process of that role, in start order.
#ifndef CAIRN_TOOLS_LAUNCH_TARGETS_FILE_H_
#define CAIRN_TOOLS_LAUNCH_TARGETS_FILE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace cairn::launch {

// The value of the `job` label (deploy/prometheus/alerts.yml selects on it).
inline constexpr char kScrapeJob[] = "cairn";

// One process's /metrics, as a file_sd target.
struct ScrapeTarget {
  std::string role;     // "coordinator", "server" or "worker"
  std::string address;  // "127.0.0.1:40123"
};

// The file_sd JSON for `targets`: one group per role, in the order the roles
// first appear, each target in the order given. `[]` when empty.
nlohmann::json TargetsJson(const std::vector<ScrapeTarget>& targets);

// "host:port" of a metrics URL such as "http://127.0.0.1:40123/metrics".
// InvalidArgument quoting `url` when it is not "http://HOST:PORT/...".
absl::StatusOr<std::string> TargetAddress(const std::string& url);

// Where the files of the layout above are.
struct PrometheusFiles {
  std::string dir;      // <workdir>/prometheus
  std::string config;   // dir/prometheus-local.yml
  std::string rules;    // dir/alerts.yml
  std::string targets;  // dir/targets/cairn.json
  std::string data;     // dir/data
};

PrometheusFiles PrometheusFilesIn(const std::string& workdir);

// The deploy directory (holding prometheus/prometheus-local.yml and
// prometheus/alerts.yml): `requested` when not empty, else the source
// tree's deploy/ that cairn-launch was built from. NotFound naming the
// missing file (and suggesting --deploy-dir) when either file is absent.
absl::StatusOr<std::string> FindDeployDir(const std::string& requested);

// Creates `files.dir`/targets and copies the scrape config and the alert
// rules from `deploy_dir`/prometheus (replacing older copies). Internal
// naming the path on failure.
absl::Status CopyPrometheusConfig(const std::string& deploy_dir, const PrometheusFiles& files);

// `deploy_dir`/prometheus/prometheus-local.yml: the scrape config copied.
std::string ScrapeConfigIn(const std::string& deploy_dir);

// OK when the scrape config at `config` is YAML with a scrape job named
// kScrapeJob under scrape_configs, which ScrapeOverHttps can change; else
// InvalidArgument naming the file and what is missing. For a check before
// the job starts.
absl::Status CheckScrapeJob(const std::string& config);

// Writes to `to` the scrape config read from `from` with its scrape job
// named kScrapeJob scraping over HTTPS, checking each target's certificate
// against the CA bundle `ca_file` (made absolute: Prometheus reads
// relative paths from the config's directory), for a job whose /metrics is
// served over HTTPS (metrics.tls). Comments are not kept; a first line says
// what was changed. Errors: CheckScrapeJob's for `from`; Internal naming
// `to` when it cannot be written.
absl::Status ScrapeOverHttps(const std::string& from, const std::string& to,
                             const std::string& ca_file);

// The targets of a running job, rewritten whole at `path` (a temporary file
// renamed into place, so readers never see a partial file) on every change.
// Not thread-safe; confined to the launcher's main thread.
class TargetsFile {
 public:
  explicit TargetsFile(std::string path) : path_(std::move(path)) {}

  // Creates the parent directory and writes the targets so far (`[]` at
  // first). Internal naming the path on failure.
  absl::Status Write() const;

  // Adds a target and rewrites the file.
  absl::Status Add(ScrapeTarget target);

  const std::string& path() const { return path_; }
  const std::vector<ScrapeTarget>& targets() const { return targets_; }

 private:
  std::string path_;
  std::vector<ScrapeTarget> targets_;
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_TARGETS_FILE_H_
