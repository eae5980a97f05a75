// IDX loading from generated gzip files (good and broken) and, when
// installed, from Debian's Fashion-MNIST files.
#include "worker/trainer/idx_loader.h"

#include <unistd.h>
#include <zlib.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace cairn {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cairn-idx-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void BigEndian(uint32_t v, std::vector<unsigned char>* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back((v >> shift) & 0xff);
}

void WriteGz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), bytes.size()) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// IDX3 images: `count` images of rows x cols, pixel (i, p) = (i * 7 + p) % 256.
std::vector<unsigned char> Images(uint32_t count, uint32_t rows, uint32_t cols,
                                  uint32_t magic = 2051) {
  std::vector<unsigned char> b;
  BigEndian(magic, &b);
  BigEndian(count, &b);
  BigEndian(rows, &b);
  BigEndian(cols, &b);
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t p = 0; p < rows * cols; ++p) b.push_back((i * 7 + p) % 256);
  }
  return b;
}

std::vector<unsigned char> Labels(const std::vector<unsigned char>& labels, uint32_t magic = 2049) {
  std::vector<unsigned char> b;
  BigEndian(magic, &b);
  BigEndian(static_cast<uint32_t>(labels.size()), &b);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

// Writes a complete, valid Fashion-MNIST-shaped directory (3 train, 2 test).
void WriteGoodSet(const TempDir& dir) {
  WriteGz(dir.File(kFashionMnistTrainImages), Images(3, 28, 28));
  WriteGz(dir.File(kFashionMnistTrainLabels), Labels({0, 9, 4}));
  WriteGz(dir.File(kFashionMnistTestImages), Images(2, 28, 28));
  WriteGz(dir.File(kFashionMnistTestLabels), Labels({3, 3}));
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("a valid gzipped set loads with pixels scaled to [0, 1]", "[worker][idx]") {
  TempDir dir;
  WriteGoodSet(dir);
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir.File(""));
  REQUIRE(data.ok());
  CHECK(data->train.size == 3);
  CHECK(data->train.features == 784);
  CHECK(data->train.num_classes == 10);
  CHECK(data->train.labels == std::vector<int32_t>{0, 9, 4});
  CHECK(data->test.labels == std::vector<int32_t>{3, 3});
  REQUIRE(data->train.images.size() == 3 * 784);
  // Image 1, pixel 0 is byte 7; image 2, pixel 37 is (14 + 37) % 256 = 51; image 0
  // pixel 255 is byte 255 -> exactly 1.
  CHECK(data->train.images[784] == 7 / 255.0f);
  CHECK(data->train.images[2 * 784 + 37] == 51 / 255.0f);
  CHECK(data->train.images[255] == 1.0f);
  CHECK(data->train.images[0] == 0.0f);
}

TEST_CASE("a truncated image file is a DataLoss naming the file and the shortfall",
          "[worker][idx]") {
  TempDir dir;
  std::vector<unsigned char> bytes = Images(3, 28, 28);
  bytes.resize(bytes.size() - 100);
  WriteGz(dir.File("img.gz"), bytes);
  absl::StatusOr<IdxImages> images = ReadIdxImages(dir.File("img.gz"));
  REQUIRE(images.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(Message(images.status()), Catch::Contains("img.gz: truncated") &&
                                           Catch::Contains("2352 pixel bytes") &&
                                           Catch::Contains("only 2252"));
}

TEST_CASE("a truncated header is a DataLoss", "[worker][idx]") {
  TempDir dir;
  WriteGz(dir.File("lab.gz"), {0, 0, 8});
  absl::StatusOr<std::vector<int32_t>> labels = ReadIdxLabels(dir.File("lab.gz"), 10);
  REQUIRE(labels.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(Message(labels.status()), Catch::Contains("lab.gz: truncated"));
}

TEST_CASE("a wrong magic number is named with the expected one", "[worker][idx]") {
  TempDir dir;
  // A label file where an image file is expected, and vice versa.
  WriteGz(dir.File("swapped-images.gz"), Labels({1, 2}));
  WriteGz(dir.File("swapped-labels.gz"), Images(1, 28, 28));
  absl::StatusOr<IdxImages> images = ReadIdxImages(dir.File("swapped-images.gz"));
  REQUIRE(images.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(images.status()), Catch::Contains("swapped-images.gz: bad magic number "
                                                       "0x00000801 (expected 2051"));
  absl::StatusOr<std::vector<int32_t>> labels = ReadIdxLabels(dir.File("swapped-labels.gz"), 10);
  REQUIRE(labels.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(labels.status()), Catch::Contains("expected 2049"));
}

TEST_CASE("image and label counts that differ are named with both files", "[worker][idx]") {
  TempDir dir;
  WriteGoodSet(dir);
  WriteGz(dir.File(kFashionMnistTrainLabels), Labels({0, 9}));
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir.File(""));
  REQUIRE(data.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(data.status()), Catch::Contains("train-images-idx3-ubyte.gz holds 3 images") &&
                                         Catch::Contains("train-labels-idx1-ubyte.gz holds 2"));
}

TEST_CASE("images that are not 28 x 28 are rejected", "[worker][idx]") {
  TempDir dir;
  WriteGoodSet(dir);
  WriteGz(dir.File(kFashionMnistTestImages), Images(2, 32, 32));
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir.File(""));
  REQUIRE(data.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(data.status()), Catch::Contains("images are 32 x 32, expected 28 x 28"));
}

TEST_CASE("a label outside 0..9 is named with its index", "[worker][idx]") {
  TempDir dir;
  WriteGz(dir.File("lab.gz"), Labels({1, 2, 10}));
  absl::StatusOr<std::vector<int32_t>> labels = ReadIdxLabels(dir.File("lab.gz"), 10);
  REQUIRE(labels.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(labels.status()), Catch::Contains("label 10 at index 2 is outside [0, 10)"));
}

TEST_CASE("data after the declared items is a DataLoss", "[worker][idx]") {
  TempDir dir;
  std::vector<unsigned char> bytes = Labels({1, 2});
  bytes.push_back(3);
  WriteGz(dir.File("lab.gz"), bytes);
  absl::StatusOr<std::vector<int32_t>> labels = ReadIdxLabels(dir.File("lab.gz"), 10);
  REQUIRE(labels.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(Message(labels.status()), Catch::Contains("unexpected data after the 2 labels"));
}

TEST_CASE("a corrupt gzip stream is a DataLoss", "[worker][idx]") {
  TempDir dir;
  WriteGz(dir.File("img.gz"), Images(3, 28, 28));
  // Cut the compressed file in half: the deflate stream ends early.
  const std::string path = dir.File("img.gz");
  fs::resize_file(path, fs::file_size(path) / 2);
  absl::StatusOr<IdxImages> images = ReadIdxImages(path);
  REQUIRE(images.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(Message(images.status()), Catch::Contains("img.gz"));
}

TEST_CASE("a missing file is NotFound naming it", "[worker][idx]") {
  TempDir dir;
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir.File(""));
  REQUIRE(data.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(Message(data.status()), Catch::Contains("train-images-idx3-ubyte.gz: no such file"));
}

TEST_CASE("Debian's Fashion-MNIST loads with 6000 and 1000 examples per class",
          "[worker][idx][slow]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(dir) / kFashionMnistTrainImages)) {
    FAIL(dir << " is not installed: tools/setup installs it (Debian package "
                "dataset-fashion-mnist)");
  }
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(dir);
  REQUIRE(data.ok());
  CHECK(data->train.size == 60000);
  CHECK(data->test.size == 10000);
  std::array<int, 10> train_hist{}, test_hist{};
  for (int32_t l : data->train.labels) ++train_hist[l];
  for (int32_t l : data->test.labels) ++test_hist[l];
  for (int c = 0; c < 10; ++c) {
    CHECK(train_hist[c] == 6000);
    CHECK(test_hist[c] == 1000);
  }
  const auto [lo, hi] = std::minmax_element(data->train.images.begin(), data->train.images.end());
  CHECK(*lo == 0.0f);
  CHECK(*hi == 1.0f);
}

}  // namespace
}  // namespace cairn
