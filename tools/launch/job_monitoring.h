// What cairn-launch does for Prometheus around one job: before anything
// starts, checks what --prometheus needs; then writes the job's file_sd
// targets and the config copies (targets_file.h), starts Prometheus with
// --prometheus (prometheus_sidecar.h), and adds each process to the targets
// as its /metrics address becomes known.
//
// Not thread-safe; confined to the launcher's main thread.
#ifndef CAIRN_TOOLS_LAUNCH_JOB_MONITORING_H_
#define CAIRN_TOOLS_LAUNCH_JOB_MONITORING_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/targets_file.h"

namespace cairn::launch {

struct MonitoringFlags {
  bool prometheus = false;        // --prometheus
  bool prometheus_keep = false;   // --prometheus-keep (needs --prometheus)
  std::string prometheus_binary;  // --prometheus-binary
  std::string deploy_dir;         // --deploy-dir; empty: the source tree's
};

// Checks the flags before any process starts and returns the deploy
// directory to copy the config from; nullopt when none was asked for and
// the default one is absent (only the targets are written then). Errors
// (for exit code 2): --prometheus-keep without --prometheus,
// CheckPrometheusInstalled's with --prometheus, and FindDeployDir's with
// --prometheus or --deploy-dir.
absl::StatusOr<std::optional<std::string>> CheckMonitoring(const MonitoringFlags& flags);

class JobMonitoring {
 public:
  // `supervisor` (borrowed) must outlive this; files go under `workdir`.
  JobMonitoring(Supervisor* supervisor, const std::string& workdir)
      : supervisor_(supervisor), files_(PrometheusFilesIn(workdir)), targets_(files_.targets) {}

  // Writes the empty targets file and, with a deploy directory, the config
  // copies; logs where they are. With `https_ca_file` (the job serves
  // /metrics over HTTPS: metrics.tls) the copied scrape config scrapes over
  // HTTPS with that CA bundle (ScrapeOverHttps). Internal naming the path
  // on failure; ScrapeOverHttps's errors.
  absl::Status WriteFiles(const std::optional<std::string>& deploy_dir,
                          const std::string& https_ca_file = "");

  // Starts Prometheus (StartPrometheus) and logs
  // "prometheus on http://127.0.0.1:PORT/ ..." once it is ready, saying
  // whether it stops with the job or, with `keep`, stays up after it
  // (KeepServing). Returns the event that ended the wait (kReady: ready);
  // errors as StartPrometheus.
  absl::StatusOr<Event> StartPrometheus(const std::string& binary, absl::Time deadline,
                                        bool keep = false);

  // --prometheus-keep, once the job's own processes have stopped (StopAll
  // with keep_prometheus): logs that Prometheus keeps serving what it
  // scraped at its URL until Ctrl-C or SIGTERM, waits for that signal (or
  // for Prometheus to end), then stops it. Returns at once when Prometheus
  // was not started or has ended.
  void KeepServing(absl::Duration stop_grace);

  // Adds the process whose /metrics is at `url` to the targets as `role`;
  // a failure is logged (the job does not depend on it).
  void AddTarget(const std::string& role, const std::string& url);

  const PrometheusFiles& files() const { return files_; }

 private:
  Supervisor* const supervisor_;
  const PrometheusFiles files_;
  TargetsFile targets_;
  std::string prometheus_url_;  // set once Prometheus is ready
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_JOB_MONITORING_H_
