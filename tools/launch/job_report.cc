#include "tools/launch/job_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace cairn::launch {
namespace {

// A worker summary's number, or `fallback` when absent or not a number.
double Number(const nlohmann::json& summary, const char* key, double fallback = 0) {
  auto it = summary.find(key);
  return it != summary.end() && it->is_number() ? it->get<double>() : fallback;
}

// "epochs" is a count; older summaries may carry a list of epochs instead.
int64_t Count(const nlohmann::json& summary, const char* key) {
  auto it = summary.find(key);
  if (it == summary.end()) return 0;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_array()) return static_cast<int64_t>(it->size());
  return 0;
}

}  // namespace

absl::StatusOr<nlohmann::json> ReadWorkerSummary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("worker summary ", path, " does not exist"));
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded() || !summary.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker summary ", path, " is not a JSON object"));
  }
  for (const char* key : {"test_accuracy", "train_loss", "examples_per_second"}) {
    auto it = summary.find(key);
    if (it == summary.end() || !it->is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker summary ", path, " has no number `", key, "`"));
    }
  }
  return summary;
}

absl::StatusOr<nlohmann::json> BuildLaunchSummary(const std::vector<nlohmann::json>& workers,
                                                  const LaunchInfo& info) {
  if (workers.empty()) return absl::InvalidArgumentError("no worker summaries to report");
  double accuracy_sum = 0, loss_sum = 0, throughput_sum = 0;
  for (const nlohmann::json& w : workers) {
    accuracy_sum += Number(w, "test_accuracy");
    loss_sum += Number(w, "train_loss");
    throughput_sum += Number(w, "examples_per_second");
  }
  const double n = static_cast<double>(workers.size());
  nlohmann::json out;
  out["test_accuracy"] = Number(workers[0], "test_accuracy");
  out["test_accuracy_mean"] = accuracy_sum / n;
  // Binary models (ctr): the ranking quality and the log loss.
  if (auto it = workers[0].find("test_auc"); it != workers[0].end() && it->is_number()) {
    out["test_auc"] = *it;
    out["test_loss"] = Number(workers[0], "test_loss");
  }
  out["train_loss"] = loss_sum / n;
  out["examples_per_second"] = throughput_sum;
  out["wall_seconds"] = info.wall_seconds;
  out["epochs"] = Count(workers[0], "epochs");
  out["steps"] = Count(workers[0], "steps");
  out["start_step"] = Count(workers[0], "start_step");
  out["servers"] = info.servers;
  out["workers"] = info.workers;
  out["workers_lost"] = info.lost_workers;
  out["config"] = info.config_path;
  out["config_hash"] = info.config_hash;
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricsEndpoint& m : info.metrics) {
    metrics.push_back({{"process", m.process}, {"url", m.url}});
  }
  out["metrics"] = std::move(metrics);
  out["per_worker"] = workers;
  return out;
}

std::vector<std::string> FormatReport(const nlohmann::json& s) {
  std::vector<std::string> lines;
  const int finished = s.contains("per_worker") ? static_cast<int>(s["per_worker"].size()) : 0;
  const int first = finished > 0 ? s["per_worker"][0].value("worker", 0) : 0;
  lines.push_back(absl::StrFormat("test accuracy: %.4f (worker %d), %.4f (mean of %d workers)",
                                  Number(s, "test_accuracy"), first,
                                  Number(s, "test_accuracy_mean"), finished));
  if (s.contains("test_auc")) {
    lines.push_back(absl::StrFormat("test AUC: %.4f, test log loss: %.4f (worker %d)",
                                    Number(s, "test_auc"), Number(s, "test_loss"), first));
  }
  if (auto it = s.find("workers_lost"); it != s.end() && it->is_array() && !it->empty()) {
    std::vector<std::string> names;
    for (const nlohmann::json& w : *it) names.push_back(absl::StrCat("worker ", w.get<int>()));
    lines.push_back(absl::StrCat("workers lost: ", absl::StrJoin(names, ", "),
                                 " (the job went on without them: cluster.on_worker_loss: "
                                 "continue)"));
  }
  // After a resume the counts are this run's, beside where it started.
  const int64_t start_step = Count(s, "start_step");
  const std::string counts =
      start_step > 0
          ? absl::StrFormat("epochs %d, steps %d since the resume at global step %d (%d in all)",
                            Count(s, "epochs"), Count(s, "steps") - start_step, start_step,
                            Count(s, "steps"))
          : absl::StrFormat("epochs %d, steps %d", Count(s, "epochs"), Count(s, "steps"));
  lines.push_back(absl::StrFormat("train loss: %.4f; %.0f examples/s over all workers; %s; %.1f s",
                                  Number(s, "train_loss"), Number(s, "examples_per_second"),
                                  counts, Number(s, "wall_seconds")));
  if (auto it = s.find("metrics"); it != s.end() && it->is_array()) {
    // Printed once every process has stopped: a record, not links to open.
    if (!it->empty()) lines.push_back("each process's /metrics while the job ran (now stopped):");
    for (const nlohmann::json& m : *it) {
      lines.push_back(absl::StrCat("metrics ", m.value("process", std::string("?")), ": ",
                                   m.value("url", std::string("?"))));
    }
  }
  return lines;
}

absl::Status WriteJsonFile(const std::string& path, const nlohmann::json& json) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json.dump(2) << "\n";
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace cairn::launch
