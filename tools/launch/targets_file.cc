#include "tools/launch/targets_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/launch/job_report.h"

namespace cairn::launch {
namespace {

namespace fs = std::filesystem;

constexpr char kConfigName[] = "prometheus-local.yml";
constexpr char kRulesName[] = "alerts.yml";

}  // namespace

nlohmann::json TargetsJson(const std::vector<ScrapeTarget>& targets) {
  nlohmann::json groups = nlohmann::json::array();
  std::vector<std::string> roles;  // in order of first appearance
  for (const ScrapeTarget& t : targets) {
    if (std::find(roles.begin(), roles.end(), t.role) == roles.end()) roles.push_back(t.role);
  }
  for (const std::string& role : roles) {
    nlohmann::json addresses = nlohmann::json::array();
    for (const ScrapeTarget& t : targets) {
      if (t.role == role) addresses.push_back(t.address);
    }
    groups.push_back({{"targets", addresses}, {"labels", {{"job", kScrapeJob}, {"role", role}}}});
  }
  return groups;
}

absl::StatusOr<std::string> TargetAddress(const std::string& url) {
  absl::string_view rest = url;
  const bool http = absl::ConsumePrefix(&rest, "http://") || absl::ConsumePrefix(&rest, "https://");
  const absl::string_view address = rest.substr(0, rest.find('/'));
  const size_t colon = address.rfind(':');
  int port = 0;
  if (!http || colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a metrics URL of the form http(s)://HOST:PORT/metrics: \"", url, "\""));
  }
  return std::string(address);
}

PrometheusFiles PrometheusFilesIn(const std::string& workdir) {
  const fs::path dir = fs::path(workdir) / "prometheus";
  return PrometheusFiles{dir.string(), (dir / kConfigName).string(), (dir / kRulesName).string(),
                         (dir / "targets" / "cairn.json").string(), (dir / "data").string()};
}

absl::StatusOr<std::string> FindDeployDir(const std::string& requested) {
#ifdef CAIRN_SOURCE_DIR
  const std::string dir = requested.empty() ? std::string(CAIRN_SOURCE_DIR "/deploy") : requested;
#else
  const std::string dir = requested;
#endif
  if (dir.empty()) {
    return absl::NotFoundError("no deploy directory known to this build; pass --deploy-dir");
  }
  for (const char* name : {kConfigName, kRulesName}) {
    const fs::path file = fs::path(dir) / "prometheus" / name;
    std::error_code error;
    if (!fs::is_regular_file(file, error)) {
      return absl::NotFoundError(absl::StrCat(
          "cannot find ", file.string(),
          " (pass --deploy-dir with the directory that holds prometheus/", name, ")"));
    }
  }
  return dir;
}

absl::Status CopyPrometheusConfig(const std::string& deploy_dir, const PrometheusFiles& files) {
  std::error_code error;
  fs::create_directories(fs::path(files.targets).parent_path(), error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", fs::path(files.targets).parent_path().string(), ": ",
                     error.message()));
  }
  const fs::path from = fs::path(deploy_dir) / "prometheus";
  for (const auto& [name, to] : {std::pair<const char*, std::string>{kConfigName, files.config},
                                 {kRulesName, files.rules}}) {
    fs::copy_file(from / name, to, fs::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot copy ", (from / name).string(), " to ", to,
                                              ": ", error.message()));
    }
  }
  return absl::OkStatus();
}

std::string ScrapeConfigIn(const std::string& deploy_dir) {
  return (fs::path(deploy_dir) / "prometheus" / kConfigName).string();
}

namespace {

// The scrape config at `config` and its scrape jobs named kScrapeJob.
struct ScrapeConfig {
  YAML::Node root;
  std::vector<YAML::Node> jobs;
};

absl::StatusOr<ScrapeConfig> LoadScrapeConfig(const std::string& config) {
  ScrapeConfig out;
  try {
    out.root = YAML::LoadFile(config);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(config, ": not a Prometheus configuration: ",
                                                   e.what()));
  }
  if (out.root.IsMap() && out.root["scrape_configs"].IsSequence()) {
    for (YAML::Node job : out.root["scrape_configs"]) {
      if (job.IsMap() && job["job_name"].IsScalar() &&
          job["job_name"].as<std::string>() == kScrapeJob) {
        out.jobs.push_back(job);
      }
    }
  }
  if (out.jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config, " has no scrape job named \"", kScrapeJob,
        "\" under scrape_configs: with metrics.tls the launcher makes that job scrape over "
        "HTTPS with the job's CA (the targets file labels every process job=\"", kScrapeJob,
        "\")"));
  }
  return out;
}

}  // namespace

absl::Status CheckScrapeJob(const std::string& config) {
  return LoadScrapeConfig(config).status();
}

absl::Status ScrapeOverHttps(const std::string& from, const std::string& to,
                             const std::string& ca_file) {
  absl::StatusOr<ScrapeConfig> config = LoadScrapeConfig(from);
  if (!config.ok()) return config.status();
  for (YAML::Node& job : config->jobs) {
    job["scheme"] = "https";
    job["tls_config"]["ca_file"] = fs::absolute(ca_file).lexically_normal().string();
  }
  YAML::Emitter out;
  out << config->root;
  const std::string tmp = to + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << "# " << from << ", copied by cairn-launch: /metrics is served over HTTPS\n"
      << "# (metrics.tls), so the job \"" << kScrapeJob
      << "\" scrapes with scheme https and the job's CA file.\n"
      << out.c_str() << "\n";
    if (!f.good()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code error;
  fs::rename(tmp, to, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", to, ": ",
                                            error.message()));
  }
  return absl::OkStatus();
}

absl::Status TargetsFile::Write() const {
  std::error_code error;
  fs::create_directories(fs::path(path_).parent_path(), error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", fs::path(path_).parent_path().string(),
                                            ": ", error.message()));
  }
  return WriteJsonFile(path_, TargetsJson(targets_));
}

absl::Status TargetsFile::Add(ScrapeTarget target) {
  targets_.push_back(std::move(target));
  return Write();
}

}  // namespace cairn::launch
