// Fuzz target: an IDX file (Fashion-MNIST images or labels, plain or
// gzipped) read by cairn-worker's loader (worker/trainer/idx_loader.h):
// ReadIdxImages and ReadIdxLabels (10 classes) on the same bytes, written to
// a file of this process first (the loader takes a path).
//
// Checks beyond the sanitizers: images that read hold count x rows x cols
// pixels in [0, 1].
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/trainer/idx_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  const std::string path = fuzz::WriteTempFile(data, size, "idx");
  absl::StatusOr<IdxImages> images = ReadIdxImages(path);
  if (images.ok()) {
    const uint64_t expected = static_cast<uint64_t>(images->count) *
                              static_cast<uint64_t>(images->rows) *
                              static_cast<uint64_t>(images->cols);
    if (images->pixels.size() != expected) {
      fuzz::Fail(absl::StrCat("images hold ", images->pixels.size(), " pixels, not ", expected));
    }
    for (float v : images->pixels) {
      if (!(v >= 0.0f && v <= 1.0f)) fuzz::Fail(absl::StrCat("pixel ", v, " outside [0, 1]"));
    }
  }
  absl::StatusOr<std::vector<int32_t>> labels = ReadIdxLabels(path, 10);
  if (labels.ok()) {
    for (int32_t l : *labels) {
      if (l < 0 || l >= 10) fuzz::Fail(absl::StrCat("label ", l, " outside [0, 10)"));
    }
  }
  return 0;
}
