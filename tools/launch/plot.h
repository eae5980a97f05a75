// `cairn-launch --plot PATH`: the job's training curves as a picture, drawn
// by Debian's gnuplot (package gnuplot-nox) from the workers' summaries
// (worker/trainer/summary_json.h, "per_epoch"). Three panels, epoch on the
// x axis: loss (train and test), test accuracy, and examples/s. A quantity
// that is the same on every worker (test loss and accuracy under BSP, where
// all evaluate one model) is drawn once, "all workers", in black; one that
// differs (train loss on each worker's own shard, throughput) gets one line
// per worker, in the same colour in every panel.
//
// The data files (one per worker) and the gnuplot script are written to a
// directory of their own (kept with --workdir), so the picture can be
// redrawn or restyled by hand: `gnuplot <dir>/curves.gp`.
#ifndef CAIRN_TOOLS_LAUNCH_PLOT_H_
#define CAIRN_TOOLS_LAUNCH_PLOT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::launch {

// Where Debian's gnuplot packages install it.
inline constexpr char kGnuplotBinary[] = "/usr/bin/gnuplot";

// One worker's per-epoch values, in epoch order.
struct EpochCurve {
  int worker = 0;
  std::vector<double> epoch;  // 1-based
  std::vector<double> train_loss;
  std::vector<double> test_loss;
  std::vector<double> test_accuracy;        // 0..1
  std::vector<double> examples_per_second;  // this worker's
};

// The curves of each summary's "per_epoch" list, in the order given
// ("worker" from each summary, else its position). InvalidArgument naming
// the worker, the epoch and the field when a value is missing or not a
// number, or when a summary has no per_epoch list.
absl::StatusOr<std::vector<EpochCurve>> CurvesFromSummaries(
    const std::vector<nlohmann::json>& summaries);

// True when every curve has the same epochs and the same values of `field`
// (relative difference at most 1e-9), so one line stands for all.
bool SameForAllWorkers(const std::vector<EpochCurve>& curves,
                       std::vector<double> EpochCurve::*field);

enum class PlotFormat { kSvg, kPng };

// The format named by `path`'s extension, ".svg" or ".png" (any case).
// InvalidArgument quoting the path otherwise.
absl::StatusOr<PlotFormat> PlotFormatFor(const std::string& path);

// OK when `binary` is an executable file; else FailedPrecondition naming it
// and the Debian package that provides it.
absl::Status CheckGnuplotInstalled(const std::string& binary);

// One data file: a "#" header naming the columns, then one line per epoch:
// "epoch train_loss test_loss test_accuracy examples_per_second".
std::string PlotData(const EpochCurve& curve);

// The gnuplot script that draws `curves` (curves[i] read from
// data_files[i], written by PlotData) into `output` in `format`, with
// `title` above the panels.
std::string PlotScript(const std::vector<EpochCurve>& curves,
                       const std::vector<std::string>& data_files, const std::string& output,
                       PlotFormat format, const std::string& title);

struct PlotOptions {
  std::string output;    // the picture, .svg or .png
  std::string work_dir;  // data files and curves.gp go here (created if missing)
  std::string title;     // e.g. "fashion-mnist.yaml: 2 servers, 2 workers"
  std::string gnuplot = kGnuplotBinary;
  absl::Duration timeout = absl::Seconds(60);  // for gnuplot to finish
};

// Writes the data files and the script, and runs gnuplot, which writes the
// picture to `options.output` (replacing it; removed again when gnuplot
// fails).
// Errors: those of CurvesFromSummaries and PlotFormatFor; Internal naming the
// path when a file cannot be written, or quoting gnuplot's stderr when it
// fails, runs past the timeout, or writes nothing.
absl::Status WritePlot(const std::vector<nlohmann::json>& summaries, const PlotOptions& options);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_PLOT_H_
