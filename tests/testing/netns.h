// Network faults for tests (tests/reliability/README.md): a process run in a network
// namespace of its own, joined to the test's by a veth pair, can be cut off
// the network and healed while it runs.
//
//   EnterPrivateNetworkOrSkip();              // first thing in the TEST_CASE
//   auto peer = NetnsPeer::Create();
//   cluster->StartServer({}, (*peer)->EnterCommand(), NetnsPeer::kPeerHost);
//   REQUIRE((*peer)->Cut().ok());             // packets from the peer are dropped
//   REQUIRE((*peer)->Heal().ok());
//
// The test itself runs in a fresh user, network and mount namespace
// (`unshare -rnm`), so nothing of the machine's own network changes and no
// privilege beyond unprivileged user namespaces is needed. Confined to the
// test thread.
#ifndef CAIRN_TESTS_TESTING_NETNS_H_
#define CAIRN_TESTS_TESTING_NETNS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/testing/process.h"

#include "tests/testing/skip.h"

namespace cairn::testing {

// Makes the running test case continue in a private network namespace: the
// first call re-executes this test binary, with the same arguments, under
// `unshare -rnm` and brings loopback up there; inside it returns at once.
// When this machine permits no user or network namespaces (a container
// without them) or lacks `unshare`, `ip` or `nsenter`, it prints why and ends
// the process with kSkipExitCode.
void EnterPrivateNetworkOrSkip();

// A network namespace joined to the test's by a veth pair: kHostAddress on
// this side, kPeerHost inside. Destroying it ends the namespace. One at a
// time per test process (the link names are fixed).
class NetnsPeer {
 public:
  static constexpr const char* kHostAddress = "10.77.0.1";
  static constexpr const char* kPeerHost = "10.77.0.2";

  // Creates the namespace (held by a child process), the veth pair and the
  // addresses; loopback is up inside too. Call after
  // EnterPrivateNetworkOrSkip(). Errors: Internal with the failing command
  // and its stderr.
  static absl::StatusOr<std::unique_ptr<NetnsPeer>> Create();
  ~NetnsPeer();

  // The command prefix that runs a program inside the namespace (nsenter,
  // which execs it: the pid stays the program's).
  std::vector<std::string> EnterCommand() const;

  // Cuts the peer off: each side's neighbour entry for the other is pinned
  // to a link-layer address nobody has, so every frame in both directions is
  // dropped on arrival and connections stall silently (no reset, no error),
  // as in a real partition. Heal() removes the entries.
  absl::Status Cut();
  absl::Status Heal();

 private:
  explicit NetnsPeer(std::unique_ptr<Subprocess> holder) : holder_(std::move(holder)) {}
  // Runs `ip args...` inside the namespace.
  absl::Status IpInside(const std::vector<std::string>& args) const;
  std::unique_ptr<Subprocess> holder_;  // `sleep` in the namespace
};

// Runs `argv` (argv[0] a path) to completion within 10 s; Internal naming the
// command, with its exit status and stderr, unless it exits 0.
absl::Status RunCommand(const std::vector<std::string>& argv);

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_NETNS_H_
