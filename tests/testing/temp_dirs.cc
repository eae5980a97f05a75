#include "tests/testing/temp_dirs.h"

#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

namespace cairn::testing {
namespace {

std::mutex& DirsMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<std::string>& Dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

std::vector<std::string> TakeDirs() {
  std::lock_guard<std::mutex> lock(DirsMutex());
  return std::exchange(Dirs(), {});
}

class TempDirRemover : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    TakeDirs();  // directories made outside any test case are never removed
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    std::vector<std::string> dirs = TakeDirs();
    if (stats.totals.assertions.allOk()) {
      for (const std::string& dir : dirs) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
      }
    }
    TestEventListenerBase::testCaseEnded(stats);
  }
};

}  // namespace

void RemoveWhenTestCasePasses(const std::string& path) {
  std::lock_guard<std::mutex> lock(DirsMutex());
  Dirs().push_back(path);
}

}  // namespace cairn::testing

using cairn::testing::TempDirRemover;
CATCH_REGISTER_LISTENER(TempDirRemover)
