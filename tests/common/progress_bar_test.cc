// The console progress bar (common/progress_bar.h): the rendered strings,
// character for character, and what the bar writes over time in each mode,
// driven by a fake clock.
#include "common/progress_bar.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "tests/fakes/fake_time_source.h"

namespace cairn {
namespace {

// A ProgressBar writing into a temporary file, read back as a string.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) { REQUIRE(file_ != nullptr); }
  ~Capture() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::string Text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) out.append(buffer, n);
    std::fseek(file_, 0, SEEK_END);
    return out;
  }

 private:
  std::FILE* file_;
};

ProgressState Example() {
  ProgressState s;
  s.step = 450;
  s.total = 1000;
  s.fields.epoch = 1;
  s.fields.num_epochs = 10;
  s.fields.examples_per_second = 1234.5;
  s.fields.loss = 0.4321;
  s.eta_seconds = 65;
  return s;
}

TEST_CASE("ETA prints hours, minutes and seconds, rounded to the second", "[progress]") {
  CHECK(FormatEta(0) == "0s");
  CHECK(FormatEta(59.4) == "59s");
  CHECK(FormatEta(59.6) == "1m00s");
  CHECK(FormatEta(65) == "1m05s");
  CHECK(FormatEta(3723) == "1h02m03s");
  CHECK(FormatEta(-1) == "--");
}

TEST_CASE("the terminal line fills the width with the bar", "[progress]") {
  // Text: "worker 0 epoch 2/10" (19) + 2 spaces + tail (47) = 68 columns; at
  // width 80 the bar gets the minimum 10 columns, 4 of them filled (45%).
  CHECK(RenderProgressBar("worker 0", Example(), 80) ==
        "worker 0 epoch 2/10 [====>     ]  45% 450/1000 1234.5 ex/s loss 0.4321 ETA 1m05s");
  // At width 100 the bar gets 30 columns, floor(0.45 * 30) = 13 filled.
  const std::string wide = RenderProgressBar("worker 0", Example(), 100);
  CHECK(wide == "worker 0 epoch 2/10 [=============>                ]  45% 450/1000 "
                "1234.5 ex/s loss 0.4321 ETA 1m05s");
  CHECK(wide.size() == 100);
}

TEST_CASE("the terminal line leaves out fields that were not given", "[progress]") {
  ProgressState s;
  s.step = 1000;
  s.total = 1000;
  s.eta_seconds = 0;
  CHECK(RenderProgressBar("", s, 30) == "[==========] 100% 1000/1000 ETA 0s");
  s.total = 0;  // unknown total: no bar, no percentage
  s.step = 7;
  s.fields.epoch = 2;  // unknown epoch count
  s.eta_seconds = -1;
  CHECK(RenderProgressBar("w", s, 80) == "w epoch 3 step 7 ETA --");
}

TEST_CASE("the log line is logfmt with every given field", "[progress]") {
  CHECK(RenderProgressLine("progress", "worker 0", Example()) ==
        "progress label=\"worker 0\" epoch=2/10 step=450/1000 percent=45.0 "
        "examples_per_second=1234.5 loss=0.4321 eta_seconds=65");
  ProgressState bare;
  bare.step = 3;
  CHECK(RenderProgressLine("done", "", bare) == "done step=3");
  // Quotes and backslashes in the label are escaped, so the line still parses.
  CHECK(RenderProgressLine("done", R"(a "b" \c)", bare) == R"(done label="a \"b\" \\c" step=3)");
}

TEST_CASE("log mode writes the first step, one line per interval, the last step and done",
          "[progress]") {
  FakeTimeSource time;
  Capture capture;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kLog;
  options.label = "w";
  options.log_interval = absl::Seconds(10);
  options.time = &time;
  ProgressBar bar(capture.file(), options);
  CHECK(bar.mode() == ProgressBar::Mode::kLog);

  bar.Update(1, 100, {});  // first: written, no rate yet
  time.Advance(absl::Seconds(5));
  bar.Update(2, 100, {});  // 5 s after the last line: not written
  time.Advance(absl::Seconds(5));
  bar.Update(3, 100, {});  // 2 steps in 10 s: 97 steps left at 0.2 steps/s = 485 s
  time.Advance(absl::Seconds(1));
  bar.Update(100, 100, {});  // the last step is always written
  bar.Finish();
  CHECK(capture.Text() ==
        "progress label=\"w\" step=1/100 percent=1.0\n"
        "progress label=\"w\" step=3/100 percent=3.0 eta_seconds=485\n"
        "progress label=\"w\" step=100/100 percent=100.0 eta_seconds=0\n"
        "done label=\"w\" step=100/100 percent=100.0 eta_seconds=0\n");
}

TEST_CASE("terminal mode redraws one line with carriage returns and ends it on Finish",
          "[progress]") {
  FakeTimeSource time;
  Capture capture;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kTerminal;
  options.width = 40;  // lines of 39 columns: the bar gets 39 - 16 - 2 = 21
  options.time = &time;
  ProgressBar bar(capture.file(), options);

  bar.Update(1, 4, {});
  time.Advance(absl::Milliseconds(50));
  bar.Update(1, 4, {});  // within the redraw interval: nothing written
  time.Advance(absl::Milliseconds(950));
  bar.Update(2, 4, {});  // 1 step per second since step 1: 2 s left
  bar.Finish();
  CHECK(capture.Text() ==
        "\r[=====>               ]  25% 1/4 ETA --"
        "\r[==========>          ]  50% 2/4 ETA 2s"
        "\r[==========>          ]  50% 2/4 ETA 2s\n");
}

TEST_CASE("terminal mode blanks what a longer previous line left", "[progress]") {
  FakeTimeSource time;
  Capture capture;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kTerminal;
  options.time = &time;
  ProgressBar bar(capture.file(), options);
  ProgressFields with_loss;
  with_loss.loss = 0.5;
  bar.Update(5, 0, with_loss);  // "step 5 loss 0.5000 ETA --": 25 columns
  time.Advance(absl::Seconds(1));
  bar.Update(6, 0, {});  // "step 6 ETA --": 13 columns, then 12 blanks
  CHECK(capture.Text() == "\rstep 5 loss 0.5000 ETA --\rstep 6 ETA --" + std::string(12, ' '));
}

TEST_CASE("the ETA restarts when the step count goes down (a new epoch)", "[progress]") {
  FakeTimeSource time;
  Capture capture;
  ProgressBar::Options options;
  options.mode = ProgressBar::Mode::kLog;
  options.log_interval = absl::ZeroDuration();  // every update
  options.time = &time;
  ProgressBar bar(capture.file(), options);
  bar.Update(0, 10, {});
  time.Advance(absl::Seconds(9));
  bar.Update(9, 10, {});  // 1 step/s: 1 s left
  time.Advance(absl::Seconds(1));
  bar.Update(1, 10, {});  // went down: the rate starts again, ETA unknown
  time.Advance(absl::Seconds(2));
  bar.Update(5, 10, {});  // 4 steps in 2 s: 5 left at 2 steps/s = 2.5 s, printed rounded: 3
  CHECK(capture.Text() ==
        "progress step=0/10 percent=0.0\n"
        "progress step=9/10 percent=90.0 eta_seconds=1\n"
        "progress step=1/10 percent=10.0\n"
        "progress step=5/10 percent=50.0 eta_seconds=3\n");
}

TEST_CASE("auto mode writes log lines when the output is not a terminal", "[progress]") {
  Capture capture;  // a regular file
  ProgressBar bar(capture.file(), ProgressBar::Options{});
  CHECK(bar.mode() == ProgressBar::Mode::kLog);
}

}  // namespace
}  // namespace cairn
