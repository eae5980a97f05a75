// Tests of the child-process helpers, with /bin/sh as the child.
#include "tests/testing/process.h"

#include <signal.h>

#include <catch2/catch.hpp>

namespace cairn::testing {
namespace {

std::string TempDir() {
  absl::StatusOr<std::string> dir = MakeTempDir("process_test");
  REQUIRE(dir.ok());
  return *dir;
}

TEST_CASE("a child's exit code, stdout and stderr are captured", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn("/bin/sh", {"-c", "echo out; echo err >&2; exit 3"},
                                 dir + "/sh");
  REQUIRE(child.ok());
  absl::StatusOr<ExitStatus> ended = (*child)->Wait(absl::Seconds(10));
  REQUIRE(ended.ok());
  CHECK(ended->exited());
  CHECK(ended->code == 3);
  CHECK(ended->ToString() == "exit code 3");
  CHECK((*child)->ReadStdout() == "out\n");
  CHECK((*child)->ReadStderr() == "err\n");
  CHECK_FALSE((*child)->Running());
}

TEST_CASE("arguments reach the child unsplit", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn("/bin/sh", {"-c", "printf '%s|' \"$@\"", "sh", "a b", "", "c"},
                                 dir + "/args");
  REQUIRE(child.ok());
  REQUIRE((*child)->Wait(absl::Seconds(10)).ok());
  CHECK((*child)->ReadStdout() == "a b||c|");
}

TEST_CASE("wait times out on a running child, and kill ends it with SIGKILL", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn("/bin/sh", {"-c", "exec sleep 60"}, dir + "/sleep");
  REQUIRE(child.ok());
  CHECK((*child)->Running());
  absl::StatusOr<ExitStatus> early = (*child)->Wait(absl::Milliseconds(50));
  CHECK(early.status().code() == absl::StatusCode::kDeadlineExceeded);
  const ExitStatus killed = (*child)->Kill();
  CHECK(killed.signal == SIGKILL);
  CHECK(killed.code == -1);
  CHECK_FALSE(killed.exited());
  CHECK((*child)->Signal(SIGTERM).code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("SIGTERM reaches the child", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn("/bin/sh", {"-c", "exec sleep 60"}, dir + "/term");
  REQUIRE(child.ok());
  REQUIRE((*child)->Signal(SIGTERM).ok());
  absl::StatusOr<ExitStatus> ended = (*child)->Wait(absl::Seconds(10));
  REQUIRE(ended.ok());
  CHECK(ended->signal == SIGTERM);
}

TEST_CASE("a binary that does not exist is an error naming it", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn(dir + "/no-such-binary", {}, dir + "/missing");
  REQUIRE_FALSE(child.ok());
  CHECK(child.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(child.status().message()),
             Catch::Matchers::Contains(dir + "/no-such-binary"));
}

TEST_CASE("a port file is read once it appears", "[testing]") {
  const std::string dir = TempDir();
  const std::string path = dir + "/ports";
  // Written under another name and renamed, as the daemons do.
  auto child = Subprocess::Spawn(
      "/bin/sh",
      {"-c", "sleep 0.2; printf 'grpc=40123\\nmetrics=9\\n' > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; "
             "exec sleep 60",
       "sh", path},
      dir + "/writer");
  REQUIRE(child.ok());
  absl::StatusOr<std::map<std::string, int>> ports =
      ReadPortFile(path, absl::Seconds(10), child->get());
  REQUIRE(ports.ok());
  CHECK(*ports == std::map<std::string, int>{{"grpc", 40123}, {"metrics", 9}});
}

TEST_CASE("reading a port file fails fast when the process ends first", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn("/bin/sh", {"-c", "echo cannot bind >&2; exit 3"},
                                 dir + "/dies");
  REQUIRE(child.ok());
  absl::StatusOr<std::map<std::string, int>> ports =
      ReadPortFile(dir + "/never", absl::Seconds(30), child->get());
  REQUIRE_FALSE(ports.ok());
  CHECK(ports.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(ports.status().message()), Catch::Matchers::Contains("exit code 3"));
  CHECK_THAT(std::string(ports.status().message()), Catch::Matchers::Contains("cannot bind"));
}

TEST_CASE("reading a port file times out when nobody writes it", "[testing]") {
  const std::string dir = TempDir();
  absl::StatusOr<std::map<std::string, int>> ports =
      ReadPortFile(dir + "/never", absl::Milliseconds(50));
  CHECK(ports.status().code() == absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("a malformed port file is rejected", "[testing]") {
  const std::string dir = TempDir();
  REQUIRE(WriteFile(dir + "/ports", "grpc=12\nnonsense\n").ok());
  absl::StatusOr<std::map<std::string, int>> ports =
      ReadPortFile(dir + "/ports", absl::Seconds(1));
  CHECK(ports.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(ports.status().message()), Catch::Matchers::Contains("nonsense"));
}

TEST_CASE("waiting for a line on stderr", "[testing]") {
  const std::string dir = TempDir();
  auto child = Subprocess::Spawn(
      "/bin/sh", {"-c", "sleep 0.1; echo 'serving on 127.0.0.1:1' >&2; exec sleep 60"},
      dir + "/log");
  REQUIRE(child.ok());
  CHECK((*child)->WaitForStderr("serving on", absl::Seconds(10)).ok());
  CHECK((*child)->WaitForStderr("never", absl::Milliseconds(50)).code() ==
        absl::StatusCode::kDeadlineExceeded);
  (*child)->Kill();
  absl::Status ended = (*child)->WaitForStderr("never", absl::Seconds(10));
  CHECK(ended.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(ended.message()), Catch::Matchers::Contains("serving on"));
}

}  // namespace
}  // namespace cairn::testing
