#include "worker/trainer/summary_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

nlohmann::json TimeSplit(const PhaseSeconds& t) {
  return {{"data", t.data},         {"pull", t.pull}, {"compute", t.compute},
          {"slowdown", t.slowdown}, {"push", t.push}};
}

}  // namespace

nlohmann::json SummaryToJson(const TrainingSummary& summary, const RunInfo& run) {
  nlohmann::json per_epoch = nlohmann::json::array();
  for (const EpochStats& e : summary.epochs) {
    nlohmann::json epoch = {{"epoch", e.epoch},
                            {"steps", e.steps},
                            {"train_loss", e.train_loss},
                            {"test_loss", e.test_loss},
                            {"test_accuracy", e.test_accuracy},
                            {"examples_per_second", e.examples_per_second},
                            {"seconds", e.seconds},
                            {"eval_seconds", e.eval_seconds},
                            {"time_split", TimeSplit(e.time)}};
    if (e.test_auc >= 0) epoch["test_auc"] = e.test_auc;
    per_epoch.push_back(std::move(epoch));
  }
  nlohmann::json out = {{"mode", run.mode},
          {"device", run.device},
          {"cpus", run.cpus},
          {"worker", run.worker},
          {"workers", run.workers},
          {"batch_size", run.batch_size},
          {"test_accuracy", summary.test_accuracy},
          {"test_loss", summary.test_loss},
          {"train_loss", summary.train_loss},
          {"examples_per_second", summary.examples_per_second},
          {"examples", summary.examples},
          {"wall_seconds", summary.wall_seconds},
          {"train_seconds", summary.train_seconds},
          {"epochs", summary.epochs.size()},
          {"steps", summary.steps},
          {"start_step", summary.start_step},
          {"loss_trace", summary.loss_trace},
          {"time_split", TimeSplit(summary.time)},
          {"per_epoch", per_epoch}};
  if (summary.test_auc >= 0) out["test_auc"] = summary.test_auc;
  return out;
}

absl::Status WriteSummaryJson(const std::string& path, const TrainingSummary& summary,
                              const RunInfo& run) {
  std::ofstream out(path, std::ios::trunc);
  if (out) out << SummaryToJson(summary, run).dump(2) << "\n";
  out.close();
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write summary to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace cairn
