#include "worker/trainer/idx_loader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace cairn {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr uint32_t kMaxImageSide = 4096;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// Sequential reader over a gzip (or plain) file; errors name the path.
class GzReader {
 public:
  static absl::StatusOr<GzReader> Open(const std::string& path) {
    errno = 0;
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) {
      const int err = errno;
      if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": cannot open: ", err != 0 ? std::strerror(err) : "out of memory"));
    }
    gzbuffer(file, 256 * 1024);
    return GzReader(path, file);
  }

  // Reads up to `n` bytes; fewer only at the end of the data.
  absl::StatusOr<size_t> Read(void* buffer, size_t n) {
    size_t done = 0;
    while (done < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      const int got = gzread(file_.get(), static_cast<char*>(buffer) + done, want);
      if (got < 0) return GzError();
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    if (done < n) {
      int errnum = Z_OK;
      gzerror(file_.get(), &errnum);
      if (errnum != Z_OK && errnum != Z_STREAM_END) return GzError();
    }
    return done;
  }

  // Reads exactly `n` bytes of `what`; DataLoss when the file ends first.
  absl::Status ReadExactly(void* buffer, size_t n, const std::string& what) {
    ASSIGN_OR_RETURN(size_t got, Read(buffer, n));
    if (got < n) {
      return absl::DataLossError(absl::StrCat(path_, ": truncated: expected ", n, " bytes of ",
                                              what, ", found only ", got));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint32_t> ReadBigEndian32(const std::string& what) {
    unsigned char b[4];
    RETURN_IF_ERROR(ReadExactly(b, sizeof(b), what));
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  // DataLoss when anything follows the declared items.
  absl::Status ExpectEnd(const std::string& items) {
    char extra;
    ASSIGN_OR_RETURN(size_t got, Read(&extra, 1));
    if (got != 0) {
      return absl::DataLossError(
          absl::StrCat(path_, ": unexpected data after the ", items, " the header declares"));
    }
    return absl::OkStatus();
  }

  const std::string& path() const { return path_; }

 private:
  GzReader(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}

  absl::Status GzError() {
    int errnum = Z_OK;
    const char* message = gzerror(file_.get(), &errnum);
    if (errnum == Z_ERRNO) message = std::strerror(errno);
    return absl::DataLossError(
        absl::StrCat(path_, ": corrupt or truncated gzip stream: ", message));
  }

  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
};

absl::Status CheckMagic(const GzReader& reader, uint32_t magic, uint32_t expected,
                        const char* kind) {
  if (magic == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: bad magic number 0x%08x (expected %u = 0x%08x, IDX %s)", reader.path(),
                      magic, expected, expected, kind));
}

}  // namespace

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path) {
  ASSIGN_OR_RETURN(GzReader reader, GzReader::Open(path));
  ASSIGN_OR_RETURN(uint32_t magic, reader.ReadBigEndian32("header"));
  RETURN_IF_ERROR(CheckMagic(reader, magic, kIdxImagesMagic, "ubyte images of rank 3"));
  ASSIGN_OR_RETURN(uint32_t count, reader.ReadBigEndian32("header"));
  ASSIGN_OR_RETURN(uint32_t rows, reader.ReadBigEndian32("header"));
  ASSIGN_OR_RETURN(uint32_t cols, reader.ReadBigEndian32("header"));
  if (rows == 0 || cols == 0 || rows > kMaxImageSide || cols > kMaxImageSide ||
      count > static_cast<uint32_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": implausible header: ", count, " images of ", rows, " x ", cols));
  }
  IdxImages images;
  images.count = count;
  images.rows = static_cast<int>(rows);
  images.cols = static_cast<int>(cols);
  const int64_t total = int64_t{count} * rows * cols;
  // Grow as data arrives (one chunk's room first, then doubling), so a
  // header that lies about the size costs no more memory than the file holds.
  const size_t first = static_cast<size_t>(std::min<int64_t>(total, kChunkBytes));
  images.pixels.reserve(first);
  std::vector<unsigned char> chunk(first);
  int64_t done = 0;
  while (done < total) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(total - done, kChunkBytes));
    ASSIGN_OR_RETURN(size_t got, reader.Read(chunk.data(), want));
    for (size_t i = 0; i < got; ++i) images.pixels.push_back(chunk[i] / 255.0f);
    done += static_cast<int64_t>(got);
    if (got < want) {
      return absl::DataLossError(absl::StrCat(path, ": truncated: header declares ", count,
                                              " images of ", rows, " x ", cols, " (", total,
                                              " pixel bytes) but the file holds only ", done));
    }
  }
  RETURN_IF_ERROR(reader.ExpectEnd(absl::StrCat(count, " images")));
  return images;
}

absl::StatusOr<std::vector<int32_t>> ReadIdxLabels(const std::string& path, int num_classes) {
  ASSIGN_OR_RETURN(GzReader reader, GzReader::Open(path));
  ASSIGN_OR_RETURN(uint32_t magic, reader.ReadBigEndian32("header"));
  RETURN_IF_ERROR(CheckMagic(reader, magic, kIdxLabelsMagic, "ubyte labels of rank 1"));
  ASSIGN_OR_RETURN(uint32_t count, reader.ReadBigEndian32("header"));
  if (count > static_cast<uint32_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": implausible label count ", count));
  }
  std::vector<int32_t> labels;
  const size_t first = std::min<size_t>(count, kChunkBytes);
  labels.reserve(first);  // then doubling, as above
  std::vector<unsigned char> chunk(first);
  while (labels.size() < count) {
    const size_t want = std::min<size_t>(count - labels.size(), kChunkBytes);
    ASSIGN_OR_RETURN(size_t got, reader.Read(chunk.data(), want));
    for (size_t i = 0; i < got; ++i) {
      if (chunk[i] >= num_classes) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": label ", int{chunk[i]},
                                                       " at index ", labels.size(),
                                                       " is outside [0, ", num_classes, ")"));
      }
      labels.push_back(chunk[i]);
    }
    if (got < want) {
      return absl::DataLossError(absl::StrCat(path, ": truncated: header declares ", count,
                                              " labels but the file holds only ", labels.size()));
    }
  }
  RETURN_IF_ERROR(reader.ExpectEnd(absl::StrCat(count, " labels")));
  return labels;
}

namespace {

absl::StatusOr<Dataset> LoadSplit(const std::string& dir, const char* images_file,
                                  const char* labels_file) {
  constexpr int kSide = kFashionMnistSide, kClasses = kFashionMnistClasses;
  const std::string images_path = absl::StrCat(dir, "/", images_file);
  const std::string labels_path = absl::StrCat(dir, "/", labels_file);
  ASSIGN_OR_RETURN(IdxImages images, ReadIdxImages(images_path));
  if (images.rows != kSide || images.cols != kSide) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, ": images are ", images.rows, " x ",
                                                   images.cols, ", expected ", kSide, " x ", kSide,
                                                   " (Fashion-MNIST)"));
  }
  ASSIGN_OR_RETURN(std::vector<int32_t> labels, ReadIdxLabels(labels_path, kClasses));
  if (static_cast<int64_t>(labels.size()) != images.count) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " holds ", images.count,
                                                   " images but ", labels_path, " holds ",
                                                   labels.size(), " labels"));
  }
  Dataset split;
  split.size = images.count;
  split.features = int64_t{kSide} * kSide;
  split.num_classes = kClasses;
  split.images = std::move(images.pixels);
  split.labels = std::move(labels);
  return split;
}

}  // namespace

absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& data_dir) {
  FashionMnist data;
  ASSIGN_OR_RETURN(data.train,
                   LoadSplit(data_dir, kFashionMnistTrainImages, kFashionMnistTrainLabels));
  ASSIGN_OR_RETURN(data.test,
                   LoadSplit(data_dir, kFashionMnistTestImages, kFashionMnistTestLabels));
  return data;
}

}  // namespace cairn
