#include "tools/launch/job_monitoring.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tools/launch/prometheus_sidecar.h"

namespace cairn::launch {

absl::StatusOr<std::optional<std::string>> CheckMonitoring(const MonitoringFlags& flags) {
  if (flags.prometheus_keep && !flags.prometheus) {
    return absl::InvalidArgumentError(
        "--prometheus-keep keeps the Prometheus of --prometheus up after the job; add "
        "--prometheus");
  }
  if (flags.prometheus) {
    if (absl::Status s = CheckPrometheusInstalled(flags.prometheus_binary); !s.ok()) return s;
  }
  absl::StatusOr<std::string> dir = FindDeployDir(flags.deploy_dir);
  if (dir.ok()) return std::optional<std::string>(*dir);
  if (flags.prometheus || !flags.deploy_dir.empty()) return dir.status();
  return std::optional<std::string>();  // targets only
}

absl::Status JobMonitoring::WriteFiles(const std::optional<std::string>& deploy_dir,
                                       const std::string& https_ca_file) {
  if (absl::Status s = targets_.Write(); !s.ok()) return s;
  if (!deploy_dir.has_value()) {
    supervisor_->Log(absl::StrCat("Prometheus file_sd targets in ", targets_.path(),
                                  " (no deploy directory found to copy the scrape config from; "
                                  "see --deploy-dir)"));
    return absl::OkStatus();
  }
  if (absl::Status s = CopyPrometheusConfig(*deploy_dir, files_); !s.ok()) return s;
  if (!https_ca_file.empty()) {
    if (absl::Status s = ScrapeOverHttps(ScrapeConfigIn(*deploy_dir), files_.config, https_ca_file);
        !s.ok()) {
      return s;
    }
  }
  supervisor_->Log(absl::StrCat(
      "Prometheus file_sd targets in ", targets_.path(), ", scrape config ", files_.config,
      https_ca_file.empty() ? "" : absl::StrCat(" (over HTTPS, CA file ", https_ca_file, ")")));
  return absl::OkStatus();
}

absl::StatusOr<Event> JobMonitoring::StartPrometheus(const std::string& binary,
                                                     absl::Time deadline, bool keep) {
  absl::StatusOr<PrometheusStart> started =
      launch::StartPrometheus(*supervisor_, binary, files_, deadline);
  if (!started.ok()) return started.status();
  if (started->event.kind == Event::Kind::kReady) {
    prometheus_url_ = started->url;
    supervisor_->Log(absl::StrCat(
        "prometheus on ", started->url, " (scraping every process of the job; ",
        keep ? "it stays up after the job until Ctrl-C: --prometheus-keep)"
             : "it stops with the job)"));
  }
  return started->event;
}

void JobMonitoring::KeepServing(absl::Duration stop_grace) {
  auto prometheus_ended = [this] {
    return std::none_of(supervisor_->members().begin(), supervisor_->members().end(),
                        [](const Member& m) {
                          return m.role == Role::kPrometheus && !m.exit.has_value();
                        });
  };
  if (prometheus_url_.empty() || prometheus_ended()) return;
  supervisor_->Log(absl::StrCat("the job has ended; prometheus keeps serving what it scraped on ",
                                prometheus_url_, " until Ctrl-C or SIGTERM (--prometheus-keep)"));
  const Event event = supervisor_->RunUntil(prometheus_ended, absl::InfiniteFuture());
  if (event.kind == Event::Kind::kSignal) {
    supervisor_->Log(absl::StrCat("stopping prometheus (signal ", event.signal, ")"));
  }
  supervisor_->StopAll(stop_grace);
}

void JobMonitoring::AddTarget(const std::string& role, const std::string& url) {
  absl::StatusOr<std::string> address = TargetAddress(url);
  absl::Status s = address.ok() ? targets_.Add({role, *address}) : address.status();
  if (!s.ok()) supervisor_->Log(absl::StrCat("cannot update the Prometheus targets: ", s.message()));
}

}  // namespace cairn::launch
