// Named kill points for crash tests: CAIRN_KILLPOINT("checkpoint.before_write")
// marks a place where a test may make this process die by SIGKILL, so that
// recovery is tested at exactly the steps that matter (before/after a WAL
// append, inside a checkpoint, before an ack). The idea follows RocksDB's
// TEST_KILL_RANDOM (test_util/sync_point.h, db_stress's kill points) and
// etcd's gofail failpoints.
//
// Compiled in only when the compile definition CAIRN_KILLPOINTS is set (the
// CMake option of that name, on by default in builds with tests); otherwise
// the macro expands to nothing and costs nothing.
//
// Which points fire comes from the environment, read once at the first
// CAIRN_KILLPOINT a process reaches:
//
//   CAIRN_KILLPOINT=<rule>[,<rule>...]
//     <name>:1_in_<N>   fire with probability 1/N at each hit of <name>
//     <name>:at_<K>     fire at the K-th hit of <name> (hits count from 1)
//     <name>:<trigger>:stall_<MS>
//                       instead of dying, stall: the thread that fires
//                       sleeps MS milliseconds, then goes on (a slow disk,
//                       a long copy, a late answer; as RocksDB's sync points
//                       with a sleeping callback)
//   CAIRN_KILLPOINT_SEED=<uint64>  seed of the 1_in_N draws; default: the pid.
//
// e.g. CAIRN_KILLPOINT=checkpoint.before_rename:at_3,push.before_ack:1_in_500.
// Names are letters, digits, '_', '.', '-'; N and K are integers >= 1; a name
// appears at most once. When the variable is set, one line
// "killpoint: CAIRN_KILLPOINT=<spec> seed <seed>" goes to stderr.
// A point that fires writes "killpoint <name> fired (hit <k>)\n" to stderr
// (one write(2), no allocation) and raises SIGKILL: nothing is flushed, no
// destructor runs, as in a real crash. A stall writes "killpoint <name>
// stalls <MS> ms (hit <k>)\n" and sleeps.
//
// A malformed variable is a test bug: the first CAIRN_KILLPOINT prints
// "killpoint: bad CAIRN_KILLPOINT=...: <why>" to stderr and aborts.
//
// Children inherit the environment: set the variable only for the process a
// test means to kill (e.g. spawn it through /usr/bin/env).
//
// Thread-safe: hit counters are atomic, the random draws are serialized.
#ifndef CAIRN_COMMON_KILLPOINT_H_
#define CAIRN_COMMON_KILLPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cairn {

// One parsed rule of CAIRN_KILLPOINT.
struct KillPointRule {
  enum class Kind { kOneIn, kAt };
  std::string name;
  Kind kind = Kind::kAt;
  int64_t n = 1;  // kOneIn: fire with probability 1/n; kAt: fire at hit n
  int64_t stall_ms = 0;  // > 0: firing sleeps this long instead of killing
};

// Parses a CAIRN_KILLPOINT value ("" gives no rules).
// Errors: InvalidArgument quoting the bad rule and saying what is wrong.
absl::StatusOr<std::vector<KillPointRule>> ParseKillPointSpec(absl::string_view spec);

// Counts a hit of the kill point `name` and SIGKILLs the process when a rule
// says so. Use the macro, not this. `name` must be a string literal (or live
// as long as the process).
void KillPoint(const char* name);

}  // namespace cairn

#ifdef CAIRN_KILLPOINTS
#define CAIRN_KILLPOINT(name) ::cairn::KillPoint(name)
#else
#define CAIRN_KILLPOINT(name) \
  do {                        \
  } while (0)
#endif

#endif  // CAIRN_COMMON_KILLPOINT_H_
