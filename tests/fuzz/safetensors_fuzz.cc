// Fuzz target: a .safetensors file as checkpoint.init_from names it
// (server/checkpoint/safetensors_import.h): ReadSafetensors, then, when it
// reads, the initial rows of every partition of each table of fuzz_shard.h
// (InitialRows with the table's optimizer and with plain zero slots).
//
// The bytes are written to a file of this process first (ReadSafetensors
// takes a path).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "server/checkpoint/safetensors_import.h"
#include "server/optimizer/optimizer.h"
#include "tests/fuzz/fuzz_shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  const std::string path = fuzz::WriteTempFile(data, size, "model.safetensors");
  absl::StatusOr<checkpoint::SafetensorsFile> file = checkpoint::ReadSafetensors(path);
  if (!file.ok()) return 0;
  static const v1::JobSpec job = fuzz::FuzzJob();
  for (const v1::TableSpec& spec : job.tables()) {
    absl::StatusOr<std::unique_ptr<Optimizer>> optimizer = MakeOptimizer(spec.optimizer());
    if (!optimizer.ok()) fuzz::Fail(absl::StrCat("optimizer: ", optimizer.status().message()));
    for (uint32_t p = 0; p < fuzz::kPartitions; ++p) {
      (void)checkpoint::InitialRows(*file, spec, fuzz::kPartitions, p, **optimizer);
      (void)checkpoint::InitialRows(*file, spec, fuzz::kPartitions, p, 0);
    }
  }
  return 0;
}
