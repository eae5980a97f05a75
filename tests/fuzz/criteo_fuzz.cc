// Fuzz target: a Criteo-format file read by the ctr model's reader
// (worker/trainer/criteo_reader.h): ReadCriteo of the whole file and of its
// first 2 examples, on the bytes written to a file of this process first
// (the reader takes a path).
//
// Checks beyond the sanitizers: data that reads has 1 label, 13 integers,
// 13 presence flags and 26 ids per example, labels 0 or 1.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/trainer/criteo_reader.h"

namespace {

void CheckShape(const cairn::CriteoData& d) {
  using cairn::fuzz::Fail;
  const uint64_t n = static_cast<uint64_t>(d.size);
  if (d.labels.size() != n || d.integers.size() != n * cairn::kCriteoIntegerFeatures ||
      d.integer_present.size() != n * cairn::kCriteoIntegerFeatures ||
      d.ids.size() != n * cairn::kCriteoCategoricalFeatures) {
    Fail(absl::StrCat("criteo data of ", n, " examples has ", d.labels.size(), " labels, ",
                      d.integers.size(), " integers, ", d.ids.size(), " ids"));
  }
  for (float l : d.labels) {
    if (l != 0.0f && l != 1.0f) Fail(absl::StrCat("label ", l));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  const std::string path = fuzz::WriteTempFile(data, size, "criteo.txt");
  absl::StatusOr<CriteoData> all = ReadCriteo(path);
  if (all.ok()) CheckShape(*all);
  absl::StatusOr<CriteoData> two = ReadCriteo(path, 2);
  if (two.ok()) {
    CheckShape(*two);
    if (two->size > 2) fuzz::Fail(absl::StrCat("max_examples 2 read ", two->size));
  }
  return 0;
}
