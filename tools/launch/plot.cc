#include "tools/launch/plot.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "tools/launch/child_process.h"

namespace cairn::launch {
namespace {

namespace fs = std::filesystem;

constexpr int kKeyRowPixels = 20;  // one line of a key, fonts 11 (PNG) and 13 (SVG)

// A gnuplot single-quoted string: no escapes inside, '' stands for '.
std::string Quote(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "''"}}), "'");
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Runs `binary args...` to its end (SIGKILL after `timeout`); returns how it
// ended and what it wrote on stdout and stderr.
absl::StatusOr<std::pair<ExitStatus, std::string>> RunToEnd(const std::string& binary,
                                                            const std::vector<std::string>& args,
                                                            absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn("gnuplot", binary, args);
  if (!child.ok()) return child.status();
  std::vector<int> fds = {(*child)->stdout_fd(), (*child)->stderr_fd()};
  std::string output;
  const absl::Time deadline = absl::Now() + timeout;
  while (!fds.empty() && absl::Now() < deadline) {
    std::vector<pollfd> polled;
    for (int fd : fds) polled.push_back(pollfd{fd, POLLIN, 0});
    if (::poll(polled.data(), polled.size(), 100) < 0 && errno != EINTR) break;
    for (size_t i = polled.size(); i-- > 0;) {
      if (polled[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i], buffer, sizeof(buffer));
      if (n > 0) output.append(buffer, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) fds.erase(fds.begin() + i);
    }
  }
  if (!fds.empty()) {
    (*child)->Kill();
    return absl::InternalError(absl::StrCat(binary, " did not finish within ",
                                            absl::FormatDuration(timeout), "; it wrote: ", output));
  }
  std::optional<ExitStatus> status;
  while (!(status = (*child)->Poll()).has_value() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return std::make_pair(status.has_value() ? *status : (*child)->Kill(), output);
}

// The "plot" command's clauses for one quantity (`column` of the data files).
std::string PlotClauses(const std::vector<EpochCurve>& curves,
                        const std::vector<std::string>& data_files, int column,
                        std::vector<double> EpochCurve::*field, const std::string& name,
                        const std::string& dash) {
  std::vector<std::string> clauses;
  const std::string style = absl::StrCat("with linespoints lw 2 pt 7 ps 0.8", dash);
  if (curves.size() > 1 && SameForAllWorkers(curves, field)) {
    clauses.push_back(absl::StrCat(Quote(data_files[0]), " using 1:", column, " ", style,
                                   " lc rgb 'black' title ", Quote(name + ", all workers")));
    return absl::StrJoin(clauses, ", ");
  }
  for (size_t i = 0; i < curves.size(); ++i) {
    const std::string who =
        curves.size() == 1 ? name : absl::StrCat(name, ", worker ", curves[i].worker);
    clauses.push_back(absl::StrCat(Quote(data_files[i]), " using 1:", column, " ", style, " lc ",
                                   curves[i].worker + 1, " title ", Quote(who)));
  }
  return absl::StrJoin(clauses, ", \\\n     ");
}

}  // namespace

absl::StatusOr<std::vector<EpochCurve>> CurvesFromSummaries(
    const std::vector<nlohmann::json>& summaries) {
  std::vector<EpochCurve> curves;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const nlohmann::json& summary = summaries[i];
    EpochCurve curve;
    curve.worker = summary.contains("worker") && summary["worker"].is_number_integer()
                       ? summary["worker"].get<int>()
                       : static_cast<int>(i);
    if (!summary.contains("per_epoch") || !summary["per_epoch"].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", curve.worker, "'s summary has no per_epoch list"));
    }
    const nlohmann::json& epochs = summary["per_epoch"];
    for (size_t e = 0; e < epochs.size(); ++e) {
      auto take = [&](const char* key, std::vector<double>* into) -> absl::Status {
        if (!epochs[e].contains(key) || !epochs[e][key].is_number()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "worker ", curve.worker, "'s summary: per_epoch[", e, "] has no number `", key, "`"));
        }
        into->push_back(epochs[e][key].get<double>());
        return absl::OkStatus();
      };
      std::vector<double> epoch;
      for (absl::Status s : {take("epoch", &epoch), take("train_loss", &curve.train_loss),
                             take("test_loss", &curve.test_loss),
                             take("test_accuracy", &curve.test_accuracy),
                             take("examples_per_second", &curve.examples_per_second)}) {
        if (!s.ok()) return s;
      }
      curve.epoch.push_back(epoch[0] + 1);  // summaries count epochs from 0
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

bool SameForAllWorkers(const std::vector<EpochCurve>& curves,
                       std::vector<double> EpochCurve::*field) {
  for (const EpochCurve& c : curves) {
    if (c.epoch != curves[0].epoch) return false;
    const std::vector<double>& a = c.*field;
    const std::vector<double>& b = curves[0].*field;
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::abs(a[i] - b[i]) > 1e-9 * std::max(std::abs(a[i]), std::abs(b[i]))) return false;
    }
  }
  return true;
}

absl::StatusOr<PlotFormat> PlotFormatFor(const std::string& path) {
  const std::string extension = absl::AsciiStrToLower(fs::path(path).extension().string());
  if (extension == ".svg") return PlotFormat::kSvg;
  if (extension == ".png") return PlotFormat::kPng;
  return absl::InvalidArgumentError(
      absl::StrCat("--plot ", path, ": the file name must end in .svg or .png"));
}

absl::Status CheckGnuplotInstalled(const std::string& binary) {
  struct stat info;
  if (::stat(binary.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      ::access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--plot: ", binary,
                     " is not installed (Debian package gnuplot-nox; tools/setup installs it)"));
  }
  return absl::OkStatus();
}

std::string PlotData(const EpochCurve& curve) {
  std::string text = absl::StrCat("# worker ", curve.worker,
                                  "\n# epoch train_loss test_loss test_accuracy "
                                  "examples_per_second\n");
  for (size_t i = 0; i < curve.epoch.size(); ++i) {
    absl::StrAppendFormat(&text, "%.0f %.9g %.9g %.9g %.9g\n", curve.epoch[i],
                          curve.train_loss[i], curve.test_loss[i], curve.test_accuracy[i],
                          curve.examples_per_second[i]);
  }
  return text;
}

std::string PlotScript(const std::vector<EpochCurve>& curves,
                       const std::vector<std::string>& data_files, const std::string& output,
                       PlotFormat format, const std::string& title) {
  double epochs = 1;
  for (const EpochCurve& c : curves) {
    if (!c.epoch.empty()) epochs = std::max(epochs, c.epoch.back());
  }
  // Pixels: the panels' plot areas, and below them the x axis and the keys
  // (the loss panel's is the longest: each worker's train loss and the test
  // loss), the same for every panel so the three line up.
  const bool shared_test = curves.size() > 1 && SameForAllWorkers(curves, &EpochCurve::test_loss);
  const int key_rows = static_cast<int>(curves.size()) + (shared_test ? 1 : curves.size());
  const int top = 70, plot = 360, bottom = 80 + kKeyRowPixels * key_rows;
  const int height = top + plot + bottom;
  std::string s = "# Training curves; cairn-launch --plot writes this file and its data files.\n";
  if (format == PlotFormat::kSvg) {
    absl::StrAppend(&s, "set terminal svg size 1500,", height,
                    " dynamic noenhanced font 'sans,13' background rgb 'white'\n");
  } else {
    absl::StrAppend(&s, "set terminal pngcairo size 1500,", height,
                    " noenhanced font 'sans,11' background rgb 'white'\n");
  }
  absl::StrAppend(&s, "set output ", Quote(output), "\n");
  absl::StrAppendFormat(&s, "set multiplot layout 1,3 title %s margins 0.06,0.98,%.3f,%.3f "
                        "spacing 0.07,0\n",
                        Quote(title), static_cast<double>(bottom) / height,
                        1.0 - static_cast<double>(top) / height);
  absl::StrAppend(&s, "set grid\nset key below left Left reverse\nset xlabel 'epoch'\n");
  absl::StrAppendFormat(&s, "set xrange [0.5:%.1f]\n", epochs + 0.5);
  if (epochs <= 20) absl::StrAppend(&s, "set xtics 1\n");
  absl::StrAppend(&s, "set title 'loss (cross-entropy)'\nset ylabel 'loss'\nplot ",
                  PlotClauses(curves, data_files, 2, &EpochCurve::train_loss, "train", ""),
                  ", \\\n     ",
                  PlotClauses(curves, data_files, 3, &EpochCurve::test_loss, "test", " dt 2"),
                  "\n");
  absl::StrAppend(&s, "set title 'test accuracy'\nset ylabel 'accuracy'\nplot ",
                  PlotClauses(curves, data_files, 4, &EpochCurve::test_accuracy, "test accuracy",
                              ""),
                  "\n");
  absl::StrAppend(&s, "set title 'throughput'\nset ylabel 'examples/s'\nplot ",
                  PlotClauses(curves, data_files, 5, &EpochCurve::examples_per_second,
                              "examples/s", ""),
                  "\nunset multiplot\nset output\n");
  return s;
}

absl::Status WritePlot(const std::vector<nlohmann::json>& summaries, const PlotOptions& options) {
  absl::StatusOr<PlotFormat> format = PlotFormatFor(options.output);
  if (!format.ok()) return format.status();
  absl::StatusOr<std::vector<EpochCurve>> curves = CurvesFromSummaries(summaries);
  if (!curves.ok()) return curves.status();
  if (curves->empty()) return absl::InvalidArgumentError("no worker summaries to plot");
  std::error_code error;
  fs::create_directories(options.work_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", options.work_dir, ": ", error.message()));
  }
  std::vector<std::string> data_files;
  for (const EpochCurve& curve : *curves) {
    data_files.push_back((fs::path(options.work_dir) / absl::StrCat("worker-", curve.worker, ".dat"))
                             .string());
    if (absl::Status s = WriteText(data_files.back(), PlotData(curve)); !s.ok()) return s;
  }
  const std::string script = (fs::path(options.work_dir) / "curves.gp").string();
  // Absolute, so the script kept in work_dir can be rerun from anywhere.
  const std::string output = fs::absolute(options.output).string();
  if (absl::Status s = WriteText(script, PlotScript(*curves, data_files, output, *format,
                                                    options.title));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::pair<ExitStatus, std::string>> ran =
      RunToEnd(options.gnuplot, {script}, options.timeout);
  if (!ran.ok()) return ran.status();
  const auto& [status, gnuplot_said] = *ran;
  const uintmax_t size = fs::file_size(output, error);
  if (!status.success() || error || size == 0) {
    fs::remove(output, error);  // no half-drawn picture
    return absl::InternalError(absl::StrCat(options.gnuplot, " ", script, " failed (",
                                            status.ToString(), "): ", gnuplot_said));
  }
  return absl::OkStatus();
}

}  // namespace cairn::launch
