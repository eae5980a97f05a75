// A console progress bar for training loops (cairn-worker, the launcher):
// epoch, step, examples/s, loss and ETA.
//
// On a terminal (isatty) one line is redrawn in place with '\r'; otherwise
// (under the launcher, in CI, redirected to a file) plain structured lines
// in logfmt ("key=value" pairs) are written every `log_interval`, so logs
// stay readable and greppable. The rendering is a pair of pure functions,
// RenderProgressBar and RenderProgressLine, that tests call directly.
//
// Typical use on the training thread:
//
//   ProgressBar bar(stdout, {.label = "worker 0"});
//   for (...) {
//     bar.Update(global_step + 1, total_steps,
//                {.epoch = epoch, .num_epochs = epochs,
//                 .examples_per_second = rate, .loss = loss});
//   }
//   bar.Finish();
#ifndef CAIRN_COMMON_PROGRESS_BAR_H_
#define CAIRN_COMMON_PROGRESS_BAR_H_

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "absl/time/time.h"
#include "common/time_source.h"

namespace cairn {

// What a caller reports besides the step. Fields left at their defaults are
// not shown.
struct ProgressFields {
  int64_t epoch = -1;                // 0-based epoch; < 0: not shown
  int64_t num_epochs = 0;            // epochs in all; 0: unknown (shown as "epoch 3")
  double examples_per_second = -1;   // < 0: not shown
  double loss = std::numeric_limits<double>::quiet_NaN();  // NaN: not shown
};

// Everything one rendered line shows.
struct ProgressState {
  int64_t step = 0;    // steps done, 0..total
  int64_t total = 0;   // steps in all; <= 0: unknown (no bar, no percentage)
  ProgressFields fields;
  double eta_seconds = -1;  // < 0: unknown ("--")
};

// "1h02m03s", "4m05s", "7s"; "--" for a negative (unknown) time. Rounds to
// the nearest second.
std::string FormatEta(double seconds);

// One terminal line of at most `width` columns (and at least the text, when
// `width` is too small for a bar), without '\r' or '\n':
//   "worker 0 epoch 2/10 [=====>    ]  45% 450/1000 1234.5 ex/s loss 0.4321 ETA 1m05s"
// The bar takes the columns the text leaves, at least 10. `label` may be empty.
std::string RenderProgressBar(const std::string& label, const ProgressState& state, int width);

// One logfmt line without '\n':
//   "progress label=\"worker 0\" epoch=2/10 step=450/1000 percent=45.0
//    examples_per_second=1234.5 loss=0.4321 eta_seconds=65"
// (one line; wrapped here). `event` is the first word ("progress", "done");
// the label is quoted, with '"' and '\' escaped by a backslash.
std::string RenderProgressLine(const std::string& event, const std::string& label,
                               const ProgressState& state);

// Not thread-safe; confined to the thread that updates it (the training loop).
class ProgressBar {
 public:
  enum class Mode {
    kAuto,      // kTerminal when `out` is a terminal, else kLog
    kTerminal,  // redraw one line with '\r'
    kLog,       // one logfmt line per log_interval
  };
  struct Options {
    Mode mode = Mode::kAuto;
    std::string label;  // e.g. "worker 0"; shown first
    // Terminal width in columns; 0: $COLUMNS when set, else 80.
    int width = 0;
    // Terminal: at most one redraw per redraw_interval (the last step always
    // draws). Log: one line per log_interval, plus the first and last step.
    absl::Duration redraw_interval = absl::Milliseconds(100);
    absl::Duration log_interval = absl::Seconds(10);
    // Time for the ETA and the intervals; null: the real clock. Must outlive
    // the bar.
    TimeSource* time = nullptr;
  };

  // `out` (e.g. stdout) must outlive the bar; it is not closed.
  ProgressBar(std::FILE* out, Options options);
  ~ProgressBar();

  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Reports that `step` of `total` steps are done (total <= 0: unknown).
  // The ETA comes from the steps per second since the first Update (or since
  // `step` last went down, as when steps count within an epoch).
  void Update(int64_t step, int64_t total, const ProgressFields& fields);

  // Draws the last state once more and ends the line (terminal), or writes a
  // "done" line (log). Later Updates start a new line. Called by the
  // destructor when the bar was updated since the last Finish.
  void Finish();

  // The mode in use (kAuto resolved).
  Mode mode() const { return mode_; }

 private:
  void Draw(bool final_draw);

  std::FILE* const out_;
  const Options options_;
  RealTimeSource real_time_;
  TimeSource* const time_;
  Mode mode_;
  int width_;

  bool active_ = false;        // updated since the last Finish
  ProgressState state_;
  absl::Time rate_start_;      // time of the step count rate_start_step_
  int64_t rate_start_step_ = 0;
  absl::Time last_draw_ = absl::InfinitePast();
  size_t last_length_ = 0;     // terminal: length of the line on screen
};

}  // namespace cairn

#endif  // CAIRN_COMMON_PROGRESS_BAR_H_
