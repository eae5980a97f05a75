// The launcher's combined progress line: reads the workers' structured
// progress lines (common/progress_bar.h, RenderProgressLine) as they pass
// through the log, keeps each worker's latest state, and renders one line
// for all of them:
//
//   "2 workers epoch 2/3 [=======>      ]  61% 572/936 9876.5 ex/s loss 0.4321 ETA 12s"
//
// Combined: step and epoch of the slowest worker, the largest total,
// examples/s summed, loss averaged, and the longest ETA.
//
// Not thread-safe; confined to the launcher's main thread.
#ifndef CAIRN_TOOLS_LAUNCH_PROGRESS_BOARD_H_
#define CAIRN_TOOLS_LAUNCH_PROGRESS_BOARD_H_

#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "common/progress_bar.h"

namespace cairn::launch {

// One parsed progress line.
struct ProgressLine {
  std::string event;  // "progress" or "done"
  std::string label;  // "worker 0"
  ProgressState state;
};

// Parses a line RenderProgressLine wrote ("progress label=\"worker 0\"
// epoch=2/10 step=450/1000 percent=45.0 examples_per_second=1234.5
// loss=0.4321 eta_seconds=65"; fields other than the event may be absent).
// nullopt when the line is not one (another log line); unknown keys are
// skipped.
std::optional<ProgressLine> ParseProgressLine(absl::string_view line);

class ProgressBoard {
 public:
  // Records `line` as worker `worker`'s latest state.
  void Update(int worker, const ProgressLine& line);

  bool empty() const { return latest_.empty(); }

  // The combined state of every worker on the board (see above).
  ProgressState Combined() const;

  // One terminal line of at most `width` columns (RenderProgressBar with
  // the label "N workers" / "worker I"); empty when the board is.
  std::string Render(int width) const;

 private:
  std::map<int, ProgressLine> latest_;  // by worker index
};

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_PROGRESS_BOARD_H_
