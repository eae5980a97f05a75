// Skipping a test case that cannot run on this machine, so that ctest (and
// every summary of it) reports it as skipped rather than passed.
//
// Only for what no project script can provide: a GPU, kernel features such
// as user namespaces. A package that tools/setup installs (the dataset,
// Prometheus, gnuplot) is a requirement: its absence fails the test.
#ifndef CAIRN_TESTS_TESTING_SKIP_H_
#define CAIRN_TESTS_TESTING_SKIP_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cairn::testing {

// The exit code of a test case that cannot run here; ctest reports it as
// skipped (SKIP_RETURN_CODE of every Cairn test, tests/CMakeLists.txt).
inline constexpr int kSkipExitCode = 77;

// Prints "SKIPPED: <why>" to stderr and ends the process with kSkipExitCode.
// ctest runs each test case in a process of its own, so this ends that case
// only; a test binary run by hand stops at its first skipped case.
[[noreturn]] inline void SkipTest(const std::string& why) {
  std::fprintf(stderr, "SKIPPED: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(kSkipExitCode);
}

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_SKIP_H_
