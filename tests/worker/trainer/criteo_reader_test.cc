// ReadCriteo (worker/trainer/criteo_reader.h): the Criteo format's fields,
// every malformed line named by file, line and field, and the output of
// tools/ctr-generate read back.
#include "worker/trainer/criteo_reader.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tests/testing/process.h"

namespace cairn {
namespace {

// A line of `label`, 13 integers and 26 ids, from `integers` and `ids`
// (padded with empty fields).
std::string Line(const std::string& label, std::vector<std::string> integers,
                 std::vector<std::string> ids) {
  integers.resize(kCriteoIntegerFeatures);
  ids.resize(kCriteoCategoricalFeatures);
  return absl::StrCat(label, "\t", absl::StrJoin(integers, "\t"), "\t", absl::StrJoin(ids, "\t"));
}

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST_CASE("a Criteo file's labels, integers and ids, with empty fields and CRLF", "[criteo]") {
  auto dir = testing::MakeTempDir("criteo_ok");
  REQUIRE(dir.ok());
  const std::string path = Write(
      *dir, "day.txt",
      Line("1", {"5", "", "-2"}, {"68fd1e64", "", "0"}) + "\n" +
          Line("0", {"", "12345678901"}, {"ffffffff", "a"}) + "\r\n" +
          Line("0", {}, {}));  // no newline at the end, but whole
  auto data = ReadCriteo(path);
  INFO(data.status().message());
  REQUIRE(data.ok());
  REQUIRE(data->size == 3);
  CHECK(data->labels == std::vector<float>{1, 0, 0});
  CHECK(data->integers[0] == 5);
  CHECK(data->integer_present[0] == 1);
  CHECK(data->integer_present[1] == 0);
  CHECK(data->integers[2] == -2);
  CHECK(data->integers[kCriteoIntegerFeatures + 1] == 12345678901);
  CHECK(data->ids[0] == 0x68fd1e64u);
  CHECK(data->ids[1] == kCriteoMissingId);
  CHECK(data->ids[2] == 0);
  CHECK(data->ids[kCriteoCategoricalFeatures] == 0xffffffffu);
  CHECK(data->ids[kCriteoCategoricalFeatures + 1] == 0xa);
  CHECK(data->ids.size() == 3u * kCriteoCategoricalFeatures);
  CHECK(data->integers.size() == 3u * kCriteoIntegerFeatures);

  auto first = ReadCriteo(path, 2);
  REQUIRE(first.ok());
  CHECK(first->size == 2);
}

TEST_CASE("a malformed line is refused naming the file, the line and the field", "[criteo]") {
  auto dir = testing::MakeTempDir("criteo_bad");
  REQUIRE(dir.ok());
  const std::string good = Line("0", {"1"}, {"ab"}) + "\n";
  struct Case {
    std::string line;
    std::string says;
  };
  const Case cases[] = {
      {"1\t2\t3\n", "3 tab-separated fields, expected 40"},
      {Line("2", {}, {}) + "\n", "field 1 (label) \"2\" is not a label"},
      {Line("1", {"", "", "x7"}, {}) + "\n", "field 4 (I3) \"x7\" is not an integer"},
      {Line("1", {"99999999999999999999"}, {}) + "\n", "(I1) \"99999999999999999999\" is out of"},
      {Line("1", {}, {"", "", "", "", "12g4"}) + "\n", "field 19 (C5) \"12g4\" is not a hexadecimal id"},
      {Line("1", {}, {"ffffffffffffffff"}) + "\n", "(C1) \"ffffffffffffffff\" is out of range"},
      {Line("1", {}, {"-12"}) + "\n", "(C1) \"-12\" is not a hexadecimal id"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(*dir, "bad.txt", good + good + c.line + good);
    auto data = ReadCriteo(path);
    INFO(c.line);
    REQUIRE_FALSE(data.ok());
    CHECK(data.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(data.status().message()), Catch::Contains(path + ":3: "));
    CHECK_THAT(std::string(data.status().message()), Catch::Contains(c.says));
  }
}

TEST_CASE("a file cut short mid-line is data loss, and a missing file is not found", "[criteo]") {
  auto dir = testing::MakeTempDir("criteo_cut");
  REQUIRE(dir.ok());
  const std::string whole = Line("1", {"3"}, {"ab", "cd"});
  const std::string path = Write(*dir, "cut.txt", whole + "\n" + whole.substr(0, 20));
  auto data = ReadCriteo(path);
  REQUIRE_FALSE(data.ok());
  CHECK(data.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(data.status().message()), Catch::Contains(path + ":2: "));
  CHECK_THAT(std::string(data.status().message()), Catch::Contains("truncated"));

  auto missing = ReadCriteo(*dir + "/none.txt");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("none.txt"));
}

TEST_CASE("tools/ctr-generate writes files this reader reads, at the click rate it reports",
          "[criteo]") {
  auto dir = testing::MakeTempDir("criteo_generated");
  REQUIRE(dir.ok());
  const std::string command =
      absl::StrCat(CAIRN_SOURCE_DIR "/tools/ctr-generate --out ", *dir,
                   " --examples 4000 --seed 5 --max-cardinality 5000 > ", *dir, "/gen.log 2>&1");
  REQUIRE(std::system(command.c_str()) == 0);
  auto train = ReadCriteo(*dir + "/train.txt");
  auto test = ReadCriteo(*dir + "/test.txt");
  INFO(train.status().message() << test.status().message());
  REQUIRE(train.ok());
  REQUIRE(test.ok());
  CHECK(train->size == 3600);
  CHECK(test->size == 400);
  std::ifstream in(*dir + "/truth.json");
  const nlohmann::json truth = nlohmann::json::parse(in);
  double clicks = 0;
  for (float l : test->labels) clicks += l;
  CHECK(clicks / test->size == Approx(truth["test_click_rate"].get<double>()));
  CHECK(truth["best_test_auc"].get<double>() > 0.6);
  CHECK(truth["best_test_log_loss"].get<double>() < truth["constant_test_log_loss"].get<double>());
  // Each field's ids stay within its cardinality; about 2% are missing.
  int64_t missing = 0;
  for (uint64_t id : train->ids) missing += id == kCriteoMissingId;
  const double share = static_cast<double>(missing) / static_cast<double>(train->ids.size());
  CHECK(share > 0.01);
  CHECK(share < 0.03);
}

}  // namespace
}  // namespace cairn
