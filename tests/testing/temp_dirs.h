// Temporary directories of a test case, removed when the case passes.
//
// MakeTempDir (process.h) records each directory it creates here. A Catch2
// listener removes the directories of a test case when every assertion of
// that case passed, and keeps them (logs, RocksDB stores, port files) when one
// failed, so a failure can be read afterwards.
#ifndef CAIRN_TESTS_TESTING_TEMP_DIRS_H_
#define CAIRN_TESTS_TESTING_TEMP_DIRS_H_

#include <string>

namespace cairn::testing {

// Records `path` as belonging to the running test case. Thread-safe.
void RemoveWhenTestCasePasses(const std::string& path);

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_TEMP_DIRS_H_
