#include "tests/testing/netns.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace cairn::testing {
namespace {

constexpr const char* kInsideVariable = "CAIRN_TEST_PRIVATE_NETWORK";
constexpr const char* kHostLink = "cairn-h";
constexpr const char* kPeerLink = "cairn-p";
// A link-layer address no interface has: frames sent to it are dropped by
// the receiving veth end, silently.
constexpr const char* kNowhere = "02:00:00:00:00:01";

// The path of `name` in the usual system directories, or "".
std::string FindTool(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

[[noreturn]] void Skip(const std::string& why) {
  std::fflush(stdout);
  SkipTest(why);
}

const std::string& LogDir() {
  static const std::string* dir = [] {
    absl::StatusOr<std::string> d = MakeTempDir("netns");
    return new std::string(d.ok() ? *d : "/tmp");
  }();
  return *dir;
}

std::string NetnsOf(pid_t pid) {
  char target[256] = {};
  const std::string link = absl::StrCat("/proc/", pid, "/ns/net");
  const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, n) : "";
}

}  // namespace

absl::Status RunCommand(const std::vector<std::string>& argv) {
  static int counter = 0;
  const std::string log = absl::StrCat(LogDir(), "/command-", ++counter);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> child, Subprocess::Spawn(argv[0], args, log));
  absl::StatusOr<ExitStatus> ended = child->Wait(absl::Seconds(10));
  if (ended.ok() && ended->exited() && ended->code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "`", absl::StrJoin(argv, " "), "`: ",
      ended.ok() ? ended->ToString() : std::string(ended.status().message()), ": ",
      child->ReadStderr()));
}

void EnterPrivateNetworkOrSkip() {
  const std::string ip = FindTool("ip");
  if (getenv(kInsideVariable) != nullptr) {
    static bool loopback_up = false;
    if (!loopback_up) {
      if (absl::Status s = RunCommand({ip, "link", "set", "lo", "up"}); !s.ok()) {
        Skip(absl::StrCat("cannot bring loopback up in the private network namespace: ",
                          s.message()));
      }
      loopback_up = true;
    }
    return;
  }
  const std::string unshare = FindTool("unshare");
  if (unshare.empty() || ip.empty() || FindTool("nsenter").empty()) {
    Skip("network fault tests need unshare, nsenter (util-linux) and ip (iproute2)");
  }
  // Everything the test will do, tried once: a namespace in a namespace, a
  // veth pair.
  if (absl::Status s = RunCommand({unshare, "-rnm", "--", ip, "link", "add", "cairn-probe", "type",
                                   "veth", "peer", "name", "cairn-probe-p"});
      !s.ok()) {
    Skip(absl::StrCat("this machine permits no private network namespace with veth pairs: ",
                      s.message()));
  }
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  char exe[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0 || args.empty()) Skip("cannot read this test's own command line");
  std::vector<std::string> argv = {unshare, "-rnm", "--", std::string(exe, n)};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  setenv(kInsideVariable, "1", 1);
  // The probe passed; its logs would outlive this process image (the test
  // case that would remove them ends in the re-executed one).
  std::error_code ignored;
  std::filesystem::remove_all(LogDir(), ignored);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(unshare.c_str(), c_argv.data());
  Skip(absl::StrCat("cannot execute ", unshare));
}

absl::StatusOr<std::unique_ptr<NetnsPeer>> NetnsPeer::Create() {
  const std::string ip = FindTool("ip");
  const std::string nsenter = FindTool("nsenter");
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> holder,
                   Subprocess::Spawn(FindTool("unshare"), {"-n", "sleep", "100000"},
                                     absl::StrCat(LogDir(), "/holder")));
  const std::string own = NetnsOf(getpid());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (NetnsOf(holder->pid()) == own || NetnsOf(holder->pid()).empty()) {
    if (absl::Now() > deadline || !holder->Running()) {
      return absl::InternalError(absl::StrCat("the namespace holder never entered a namespace: ",
                                              holder->ReadStderr()));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::unique_ptr<NetnsPeer> peer(new NetnsPeer(std::move(holder)));
  RETURN_IF_ERROR(RunCommand({ip, "link", "add", kHostLink, "type", "veth", "peer", "name",
                              kPeerLink}));
  RETURN_IF_ERROR(RunCommand({ip, "addr", "add", absl::StrCat(kHostAddress, "/24"), "dev",
                              kHostLink}));
  RETURN_IF_ERROR(RunCommand({ip, "link", "set", kHostLink, "up"}));
  RETURN_IF_ERROR(
      RunCommand({ip, "link", "set", kPeerLink, "netns", absl::StrCat(peer->holder_->pid())}));
  RETURN_IF_ERROR(peer->IpInside({"link", "set", "lo", "up"}));
  RETURN_IF_ERROR(peer->IpInside({"addr", "add", absl::StrCat(kPeerHost, "/24"), "dev", kPeerLink}));
  RETURN_IF_ERROR(peer->IpInside({"link", "set", kPeerLink, "up"}));
  return peer;
}

NetnsPeer::~NetnsPeer() { holder_->Kill(); }

std::vector<std::string> NetnsPeer::EnterCommand() const {
  return {FindTool("nsenter"), absl::StrCat("--net=/proc/", holder_->pid(), "/ns/net"), "--"};
}

absl::Status NetnsPeer::IpInside(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = EnterCommand();
  argv.push_back(FindTool("ip"));
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

absl::Status NetnsPeer::Cut() {
  // Each side sends to a link-layer address nobody has: frames in both
  // directions are dropped on arrival, and senders see nothing but silence.
  RETURN_IF_ERROR(RunCommand({FindTool("ip"), "neigh", "replace", kPeerHost, "lladdr", kNowhere,
                              "dev", kHostLink, "nud", "permanent"}));
  return IpInside(
      {"neigh", "replace", kHostAddress, "lladdr", kNowhere, "dev", kPeerLink, "nud", "permanent"});
}

absl::Status NetnsPeer::Heal() {
  RETURN_IF_ERROR(RunCommand({FindTool("ip"), "neigh", "del", kPeerHost, "dev", kHostLink}));
  return IpInside({"neigh", "del", kHostAddress, "dev", kPeerLink});
}

}  // namespace cairn::testing
