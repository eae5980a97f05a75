// Reads the IDX files of MNIST-style datasets (gzipped or plain) and loads
// Fashion-MNIST from a directory.
//
// IDX format (Y. LeCun, "THE MNIST DATABASE", yann.lecun.com/exdb/mnist):
// big-endian uint32 magic (2051 = 0x00000803 for ubyte images of rank 3,
// 2049 = 0x00000801 for ubyte labels of rank 1), big-endian uint32 sizes of
// each dimension, then the items as unsigned bytes, row-major.
//
// Every error names the file and says what was wrong: NotFound (missing),
// InvalidArgument (bad magic, dimensions, label out of range, counts that do
// not match), DataLoss (truncated data, corrupt gzip stream, trailing bytes).
// Thread-safe (no shared state).
#ifndef CAIRN_WORKER_TRAINER_IDX_LOADER_H_
#define CAIRN_WORKER_TRAINER_IDX_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn {

inline constexpr uint32_t kIdxImagesMagic = 2051;
inline constexpr uint32_t kIdxLabelsMagic = 2049;

// Images of one IDX3 file: count images of rows x cols pixels.
struct IdxImages {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  // count * rows * cols floats, row-major (image, row, column), pixel / 255
  // so every value is in [0, 1].
  std::vector<float> pixels;
};

// Reads an IDX3 ubyte image file (gzip or plain).
absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path);

// Reads an IDX1 ubyte label file (gzip or plain); every label must be in
// [0, num_classes). Labels are widened to int32.
absl::StatusOr<std::vector<int32_t>> ReadIdxLabels(const std::string& path, int num_classes);

// One split of a classification dataset, flattened for an MLP.
struct Dataset {
  int64_t size = 0;      // examples
  int64_t features = 0;  // floats per example (rows * cols)
  int num_classes = 0;
  std::vector<float> images;    // size x features, row-major, values in [0, 1]
  std::vector<int32_t> labels;  // size, each in [0, num_classes)
};

struct FashionMnist {
  Dataset train;  // 60000 examples in the official files
  Dataset test;   // 10000
};

// Fashion-MNIST's examples: 28 x 28 pixels, 10 classes.
inline constexpr int kFashionMnistSide = 28;
inline constexpr int kFashionMnistClasses = 10;
inline constexpr char kFashionMnistTrainImages[] = "train-images-idx3-ubyte.gz";
inline constexpr char kFashionMnistTrainLabels[] = "train-labels-idx1-ubyte.gz";
inline constexpr char kFashionMnistTestImages[] = "t10k-images-idx3-ubyte.gz";
inline constexpr char kFashionMnistTestLabels[] = "t10k-labels-idx1-ubyte.gz";

// Loads the four Fashion-MNIST files from `data_dir` (Debian's
// dataset-fashion-mnist installs them in /usr/share/datasets/fashion-mnist):
// images must be 28 x 28, labels in [0, 10), and each split's image and label
// counts equal (InvalidArgument naming both files otherwise).
absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& data_dir);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_IDX_LOADER_H_
