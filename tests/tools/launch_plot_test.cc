// cairn-launch --plot: curves read from worker summaries, the decision to
// draw one line for all workers, the data files, and real pictures drawn by
// Debian's gnuplot (skipped when it is not installed).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/match.h"
#include "tests/testing/process.h"
#include "tools/launch/plot.h"

namespace cairn::launch {
namespace {

// A worker summary as cairn-worker writes it (fields the plot reads).
nlohmann::json Summary(int worker, const std::vector<double>& train_loss,
                       const std::vector<double>& test_accuracy, const std::vector<double>& rate) {
  nlohmann::json per_epoch = nlohmann::json::array();
  for (size_t e = 0; e < train_loss.size(); ++e) {
    per_epoch.push_back({{"epoch", e},
                         {"train_loss", train_loss[e]},
                         {"test_loss", 2 * test_accuracy[e]},
                         {"test_accuracy", test_accuracy[e]},
                         {"examples_per_second", rate[e]}});
  }
  return {{"worker", worker}, {"per_epoch", per_epoch}};
}

std::vector<nlohmann::json> TwoBspWorkers() {
  return {Summary(0, {0.9, 0.5, 0.4}, {0.70, 0.80, 0.84}, {1000, 1100, 1200}),
          Summary(1, {0.8, 0.6, 0.3}, {0.70, 0.80, 0.84}, {900, 950, 1000})};
}

TEST_CASE("curves come from each summary's per_epoch, epochs counted from 1",
          "[tools][launch][plot]") {
  absl::StatusOr<std::vector<EpochCurve>> curves = CurvesFromSummaries(TwoBspWorkers());
  REQUIRE(curves.ok());
  REQUIRE(curves->size() == 2);
  CHECK((*curves)[1].worker == 1);
  CHECK((*curves)[1].epoch == std::vector<double>{1, 2, 3});
  CHECK((*curves)[1].train_loss == std::vector<double>{0.8, 0.6, 0.3});
  CHECK((*curves)[1].examples_per_second == std::vector<double>{900, 950, 1000});
  // Under BSP every worker evaluates the same model; the train losses are
  // each worker's own shard's.
  CHECK(SameForAllWorkers(*curves, &EpochCurve::test_accuracy));
  CHECK(SameForAllWorkers(*curves, &EpochCurve::test_loss));
  CHECK_FALSE(SameForAllWorkers(*curves, &EpochCurve::train_loss));
  CHECK_FALSE(SameForAllWorkers(*curves, &EpochCurve::examples_per_second));

  CHECK(PlotData((*curves)[0]) ==
        "# worker 0\n# epoch train_loss test_loss test_accuracy examples_per_second\n"
        "1 0.9 1.4 0.7 1000\n2 0.5 1.6 0.8 1100\n3 0.4 1.68 0.84 1200\n");
}

TEST_CASE("workers that ran different epochs never share a line", "[tools][launch][plot]") {
  absl::StatusOr<std::vector<EpochCurve>> curves =
      CurvesFromSummaries({Summary(0, {0.9, 0.5}, {0.7, 0.8}, {1, 2}),
                           Summary(1, {0.9}, {0.7}, {1})});
  REQUIRE(curves.ok());
  CHECK_FALSE(SameForAllWorkers(*curves, &EpochCurve::test_accuracy));
}

TEST_CASE("a summary without per-epoch numbers is named", "[tools][launch][plot]") {
  nlohmann::json broken = Summary(3, {0.9}, {0.7}, {1});
  broken["per_epoch"][0].erase("test_accuracy");
  absl::StatusOr<std::vector<EpochCurve>> curves = CurvesFromSummaries({broken});
  REQUIRE_FALSE(curves.ok());
  CHECK(curves.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(curves.status().message() ==
        "worker 3's summary: per_epoch[0] has no number `test_accuracy`");
  CHECK(CurvesFromSummaries({nlohmann::json{{"worker", 2}}}).status().message() ==
        "worker 2's summary has no per_epoch list");
}

TEST_CASE("the picture's format comes from the file name", "[tools][launch][plot]") {
  CHECK(*PlotFormatFor("a/b.svg") == PlotFormat::kSvg);
  CHECK(*PlotFormatFor("B.PNG") == PlotFormat::kPng);
  CHECK(PlotFormatFor("curves.pdf").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(PlotFormatFor("curves").status().message() ==
        "--plot curves: the file name must end in .svg or .png");
  CHECK(CheckGnuplotInstalled("/nonexistent/gnuplot").message() ==
        "--plot: /nonexistent/gnuplot is not installed (Debian package gnuplot-nox; "
        "tools/setup installs it)");
}

TEST_CASE("the script draws shared quantities once and the others per worker",
          "[tools][launch][plot]") {
  absl::StatusOr<std::vector<EpochCurve>> curves = CurvesFromSummaries(TwoBspWorkers());
  REQUIRE(curves.ok());
  const std::string script =
      PlotScript(*curves, {"d/w0.dat", "d/it's.dat"}, "out.svg", PlotFormat::kSvg, "a job");
  CHECK(absl::StrContains(script, "set terminal svg size 1500,570 "));  // 3 key rows
  CHECK(absl::StrContains(script, "set output 'out.svg'"));
  CHECK(absl::StrContains(script, "'d/it''s.dat' using 1:2"));  // quote doubled
  CHECK(absl::StrContains(script, "title 'train, worker 1'"));
  CHECK(absl::StrContains(script, "title 'test, all workers'"));
  CHECK_FALSE(absl::StrContains(script, "test, worker"));
  CHECK(absl::StrContains(script, "title 'test accuracy, all workers'"));
  CHECK(absl::StrContains(script, "title 'examples/s, worker 0'"));
  CHECK(absl::StrContains(script, "set xrange [0.5:3.5]"));
}

TEST_CASE("gnuplot draws the curves as PNG and SVG", "[tools][launch][plot]") {
  if (::access(kGnuplotBinary, X_OK) != 0) {
    FAIL(kGnuplotBinary
         << " is not installed: tools/setup installs it (Debian package gnuplot-nox)");
  }
  absl::StatusOr<std::string> dir = testing::MakeTempDir("launch_plot_unit");
  REQUIRE(dir.ok());
  PlotOptions options;
  options.work_dir = *dir + "/work";
  options.title = "two workers";

  options.output = *dir + "/curves.png";
  absl::Status drawn = WritePlot(TwoBspWorkers(), options);
  INFO(drawn.message());
  REQUIRE(drawn.ok());
  const std::string png = testing::ReadFileOrEmpty(options.output);
  REQUIRE(png.size() > 24);
  CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
  // IHDR: big-endian width and height at bytes 16 and 20; the height is
  // 70 (title) + 360 (panels) + 80 (x axis) + 3 key rows * 20.
  auto be32 = [&](size_t at) {
    return (static_cast<unsigned char>(png[at]) << 24) |
           (static_cast<unsigned char>(png[at + 1]) << 16) |
           (static_cast<unsigned char>(png[at + 2]) << 8) | static_cast<unsigned char>(png[at + 3]);
  };
  CHECK(be32(16) == 1500);
  CHECK(be32(20) == 570);
  CHECK(png.size() > 20000);  // three panels of lines and text, not a blank canvas
  CHECK(std::filesystem::exists(options.work_dir + "/curves.gp"));

  options.output = *dir + "/curves.svg";
  REQUIRE(WritePlot(TwoBspWorkers(), options).ok());
  const std::string svg = testing::ReadFileOrEmpty(options.output);
  CHECK(absl::StrContains(svg, "<svg"));
  CHECK(absl::StrContains(svg, "examples/s, worker 1"));
}

TEST_CASE("a gnuplot failure is reported with what it said, and leaves no picture",
          "[tools][launch][plot]") {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("launch_plot_fail");
  REQUIRE(dir.ok());
  PlotOptions options;
  options.work_dir = *dir + "/work";
  options.output = *dir + "/no-such-dir/curves.svg";  // gnuplot cannot open it
  if (::access(kGnuplotBinary, X_OK) != 0) options.gnuplot = "/bin/false";
  const absl::Status status = WritePlot(TwoBspWorkers(), options);
  CHECK(status.code() == absl::StatusCode::kInternal);
  CHECK(absl::StrContains(status.message(), "curves.gp failed ("));
  CHECK_FALSE(std::filesystem::exists(options.output));
}

}  // namespace
}  // namespace cairn::launch
