// The main of a fuzz target in builds without libFuzzer (CAIRN_FUZZ off):
// runs every file of the directories (and every file) named on the command
// line through LLVMFuzzerTestOneInput, once each, in name order, so ctest
// replays the seed corpora and the crash regressions in tests/fuzz/corpus.
//
// Exit 0 when every input ran; 1 when an argument cannot be read or names no
// input at all (an empty corpus would test nothing). A crash of the target
// ends the process as it would under libFuzzer; the last "running" line
// names the input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool ReadFile(const fs::path& path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: %s is neither a file nor a directory\n", argv[0], argv[i]);
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "%s: no inputs (usage: %s CORPUS_DIR_OR_FILE...)\n", argv[0], argv[0]);
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  std::vector<uint8_t> bytes;
  for (const fs::path& input : inputs) {
    if (!ReadFile(input, &bytes)) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], input.c_str());
      return 1;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", input.c_str(), bytes.size());
    // A copy of exactly the input's size, so a read past its end is one.
    std::vector<uint8_t> exact(bytes);
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
  }
  std::printf("%s: %zu inputs replayed\n", argv[0], inputs.size());
  return 0;
}
