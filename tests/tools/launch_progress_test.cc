// cairn-launch's console: reading the workers' progress lines back
// (progress_board.h), combining them into one line, and keeping that line
// below the log on a terminal (console.h).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "common/progress_bar.h"
#include "tools/launch/console.h"
#include "tools/launch/progress_board.h"

namespace cairn::launch {
namespace {

ProgressState State(int64_t step, int64_t total, int64_t epoch, int64_t epochs, double rate,
                    double loss, double eta) {
  ProgressState s;
  s.step = step;
  s.total = total;
  s.fields.epoch = epoch;
  s.fields.num_epochs = epochs;
  s.fields.examples_per_second = rate;
  s.fields.loss = loss;
  s.eta_seconds = eta;
  return s;
}

TEST_CASE("a rendered progress line parses back to the same state", "[tools][launch]") {
  const ProgressState s = State(450, 1000, 1, 10, 1234.5, 0.4321, 65);
  const std::string line = RenderProgressLine("progress", "worker \"0\"", s);
  const std::optional<ProgressLine> parsed = ParseProgressLine(line);
  REQUIRE(parsed.has_value());
  CHECK(parsed->event == "progress");
  CHECK(parsed->label == "worker \"0\"");  // quotes escaped and unescaped
  CHECK(parsed->state.step == 450);
  CHECK(parsed->state.total == 1000);
  CHECK(parsed->state.fields.epoch == 1);  // "epoch=2/10" counts from 1
  CHECK(parsed->state.fields.num_epochs == 10);
  CHECK(parsed->state.fields.examples_per_second == 1234.5);
  CHECK(parsed->state.fields.loss == 0.4321);
  CHECK(parsed->state.eta_seconds == 65);
}

TEST_CASE("progress lines without the optional fields parse, other lines do not",
          "[tools][launch]") {
  const std::optional<ProgressLine> done = ParseProgressLine("done label=\"worker 1\" step=17");
  REQUIRE(done.has_value());
  CHECK(done->event == "done");
  CHECK(done->state.step == 17);
  CHECK(done->state.total == 0);
  CHECK(done->state.fields.epoch == -1);
  CHECK(std::isnan(done->state.fields.loss));
  CHECK(done->state.eta_seconds == -1);

  for (const char* other : {"2026-01-05 10:00:01.234 worker I epoch 1/2 steps 468",
                            "progress", "progress label=\"worker 0\" epoch=1/2",  // no step
                            "progress step=x/10", "progress label=\"unterminated step=1",
                            "done step"}) {
    INFO(other);
    CHECK_FALSE(ParseProgressLine(other).has_value());
  }
}

TEST_CASE("the board combines workers: slowest step, summed rate, mean loss, longest ETA",
          "[tools][launch]") {
  ProgressBoard board;
  CHECK(board.empty());
  CHECK(board.Render(80).empty());
  board.Update(0, {"progress", "worker 0", State(300, 936, 0, 2, 1000, 0.5, 20)});
  board.Update(1, {"progress", "worker 1", State(290, 936, 0, 2, 1500, 0.7, 25)});
  board.Update(0, {"progress", "worker 0", State(310, 936, 0, 2, 1100, 0.4, 18)});  // newer
  const ProgressState c = board.Combined();
  CHECK(c.step == 290);
  CHECK(c.total == 936);
  CHECK(c.fields.epoch == 0);
  CHECK(c.fields.num_epochs == 2);
  CHECK(c.fields.examples_per_second == 2600);  // 1100 + 1500
  CHECK(c.fields.loss == Approx(0.55).margin(1e-12));  // (0.4 + 0.7) / 2
  CHECK(c.eta_seconds == 25);
  // 290 of 936 is 30.98%: RenderProgressBar floors it.
  CHECK(board.Render(100) == RenderProgressBar("2 workers", c, 100));
  CHECK(board.Render(100).find(" 30% 290/936 2600.0 ex/s loss 0.5500 ETA 25s") !=
        std::string::npos);
}

TEST_CASE("one worker on the board is shown by its label", "[tools][launch]") {
  ProgressBoard board;
  board.Update(3, {"progress", "worker 3", State(5, 10, 0, 1, 10, 1.0, 5)});
  CHECK(board.Render(80).rfind("worker 3 epoch 1/1 [", 0) == 0);
}

// Everything written to a pipe so far.
std::string Drain(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  return out;
}

TEST_CASE("a live console erases its status line before a log line and redraws it after",
          "[tools][launch]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_NONBLOCK) == 0);
  {
    Console console(fds[1], /*live=*/true);
    console.WriteLine(fds[1], "first");  // no status yet: written as it is
    console.SetStatus("50% done");
    console.WriteLine(fds[1], "second");
    console.SetStatus("60% done\nignored");  // one line only
    console.ClearStatus();
    console.WriteLine(fds[1], "third");
  }
  CHECK(Drain(fds[0]) ==
        "first\n"
        "\r\033[K50% done"                 // drawn
        "\r\033[Ksecond\n\r\033[K50% done"  // erased, the line, drawn again
        "\r\033[K60% done"                 // replaced
        "\r\033[K"                         // cleared
        "third\n");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("a plain console never draws a status line", "[tools][launch]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_NONBLOCK) == 0);
  {
    Console console(fds[1], /*live=*/false);
    console.SetStatus("50% done");
    console.WriteLine(fds[1], "a line");
    console.ClearStatus();
  }
  CHECK(Drain(fds[0]) == "a line\n");
  CHECK_FALSE(Console::IsLiveTerminal(fds[1]));  // a pipe is no terminal
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace cairn::launch
