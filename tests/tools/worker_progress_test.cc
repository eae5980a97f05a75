// cairn-worker's console progress (worker/trainer/progress_reporter.h):
// what the logfmt lines that cairn-launch reads say, and how the terminal
// bar ends each epoch's line. Time comes from a FakeTimeSource.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/fakes/fake_time_source.h"
#include "worker/trainer/progress_reporter.h"

namespace cairn {
namespace {

// Everything written to `file` so far.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) out.append(buffer, n);
  return out;
}

StepRecord Step(int64_t epoch, int64_t step, int64_t global, int64_t epoch_steps, int64_t total,
                double loss) {
  StepRecord r;
  r.epoch = epoch;
  r.step = step;
  r.global_step = global;
  r.epoch_steps = epoch_steps;
  r.total_steps = total;
  r.batch = 10;
  r.loss = loss;
  r.time.compute = 0.01;  // 10 examples in 10 ms: 1000 examples/s
  return r;
}

TEST_CASE("off a terminal the worker writes logfmt progress lines per interval",
          "[worker][progress]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  FakeTimeSource time;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kLog;
  options.label = "worker 0";
  options.log_interval = absl::Milliseconds(2500);
  options.time = &time;
  {
    ProgressReporter reporter(out, options, /*num_epochs=*/2);
    const std::vector<double> losses = {1.0, 0.8, 0.6, 0.5, 0.4, 0.3};
    for (int64_t g = 0; g < 6; ++g) {  // 2 epochs of 3 steps, one step a second
      reporter.OnStep(Step(g / 3, g % 3, g, 3, 6, losses[g]));
      time.Advance(absl::Seconds(1));
    }
    reporter.Finish();
  }
  const std::vector<std::string> lines = absl::StrSplit(Contents(out), '\n', absl::SkipEmpty());
  // The first step, the first after 2.5 s (step 4, 3 s later), the last,
  // and "done". Loss and examples/s are the current epoch's so far; the ETA
  // is 2 steps at 1 step/s.
  CHECK(lines == std::vector<std::string>{
                     "progress label=\"worker 0\" epoch=1/2 step=1/6 percent=16.7 "
                     "examples_per_second=1000.0 loss=1.0000",
                     "progress label=\"worker 0\" epoch=2/2 step=4/6 percent=66.7 "
                     "examples_per_second=1000.0 loss=0.5000 eta_seconds=2",
                     "progress label=\"worker 0\" epoch=2/2 step=6/6 percent=100.0 "
                     "examples_per_second=1000.0 loss=0.4000 eta_seconds=0",
                     "done label=\"worker 0\" epoch=2/2 step=6/6 percent=100.0 "
                     "examples_per_second=1000.0 loss=0.4000 eta_seconds=0"});
  std::fclose(out);
}

TEST_CASE("the epochs shown are those max_steps leaves", "[worker][progress]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  FakeTimeSource time;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kLog;
  options.time = &time;
  {
    // 5 epochs of 3 steps configured, max_steps 4: epoch 0 and one step of epoch 1.
    ProgressReporter reporter(out, options, /*num_epochs=*/5);
    reporter.OnStep(Step(0, 0, 0, 3, 4, 1.0));
  }
  CHECK(Contents(out).find(" epoch=1/2 step=1/4 ") != std::string::npos);
  std::fclose(out);
}

TEST_CASE("on a terminal each epoch's bar ends its line before the epoch's log line",
          "[worker][progress]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  FakeTimeSource time;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kTerminal;
  options.label = "worker 1";
  options.width = 100;
  options.time = &time;
  {
    ProgressReporter reporter(out, options, /*num_epochs=*/2);
    for (int64_t g = 0; g < 6; ++g) {
      reporter.OnStep(Step(g / 3, g % 3, g, 3, 6, 0.5));
      time.Advance(absl::Milliseconds(200));  // past the redraw interval: every step draws
    }
    reporter.Finish();  // nothing left to end
  }
  const std::string text = Contents(out);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 2);  // one finished line per epoch
  // What stays on screen of each line: the text after its last '\r'.
  const std::string first = lines[0].substr(lines[0].rfind('\r') + 1);
  const std::string second = lines[1].substr(lines[1].rfind('\r') + 1);
  CHECK(first.rfind("worker 1 epoch 1/2 [", 0) == 0);
  CHECK(first.find("]  50% 3/6 1000.0 ex/s loss 0.5000 ETA ") != std::string::npos);
  CHECK(second.rfind("worker 1 epoch 2/2 [", 0) == 0);
  CHECK(second.find("] 100% 6/6 1000.0 ex/s loss 0.5000 ETA 0s") != std::string::npos);
  CHECK(first.size() <= 99);  // the width, less the spare column
  std::fclose(out);
}

}  // namespace
}  // namespace cairn
