#include "common/killpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace cairn {
namespace {

constexpr char kSpecVariable[] = "CAIRN_KILLPOINT";
constexpr char kSeedVariable[] = "CAIRN_KILLPOINT_SEED";

bool ValidName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Writes all of `text` to stderr with write(2): no buffering, no locks.
void WriteStderr(const char* text, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    text += n;
    size -= static_cast<size_t>(n);
  }
}
void WriteStderr(const std::string& text) { WriteStderr(text.data(), text.size()); }

// A rule with its hit counter.
struct ArmedRule {
  KillPointRule rule;
  std::atomic<int64_t> hits{0};
};

// The process's kill-point configuration, built once from the environment.
// Rules and `error` are immutable after construction; the RNG is guarded.
struct State {
  std::vector<std::unique_ptr<ArmedRule>> rules;
  std::string error;  // non-empty: the environment was malformed
  absl::Mutex mu;
  std::mt19937_64 rng ABSL_GUARDED_BY(mu);
};

State* MakeState() {
  auto* state = new State;  // never freed: kill points may run during exit
  const char* spec = std::getenv(kSpecVariable);
  if (spec == nullptr) return state;
  absl::StatusOr<std::vector<KillPointRule>> rules = ParseKillPointSpec(spec);
  if (!rules.ok()) {
    state->error = absl::StrCat("killpoint: bad ", kSpecVariable, "=", spec, ": ",
                                rules.status().message(), "\n");
    return state;
  }
  uint64_t seed = static_cast<uint64_t>(::getpid());
  if (const char* seed_text = std::getenv(kSeedVariable); seed_text != nullptr) {
    if (!absl::SimpleAtoi(seed_text, &seed)) {
      state->error = absl::StrCat("killpoint: bad ", kSeedVariable, "=", seed_text,
                                  ": expected an unsigned 64-bit integer\n");
      return state;
    }
  }
  for (KillPointRule& rule : *rules) {
    auto armed = std::make_unique<ArmedRule>();
    armed->rule = std::move(rule);
    state->rules.push_back(std::move(armed));
  }
  {
    absl::MutexLock lock(&state->mu);
    state->rng.seed(seed);
  }
  WriteStderr(absl::StrCat("killpoint: ", kSpecVariable, "=", spec, " seed ", seed, "\n"));
  return state;
}

State& GetState() {
  static State* const state = MakeState();  // thread-safe initialization
  return *state;
}

[[noreturn]] void Fire(const char* name, int64_t hit) {
  char line[512];
  const int n = std::snprintf(line, sizeof(line), "killpoint %s fired (hit %lld)\n", name,
                              static_cast<long long>(hit));
  if (n > 0) WriteStderr(line, std::min(static_cast<size_t>(n), sizeof(line) - 1));
  ::raise(SIGKILL);
  std::abort();  // not reached
}

}  // namespace

absl::StatusOr<std::vector<KillPointRule>> ParseKillPointSpec(absl::string_view spec) {
  std::vector<KillPointRule> rules;
  std::set<std::string> names;
  if (spec.empty()) return rules;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    const size_t colon = item.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rule \"", item, "\" has no ':'; expected <name>:1_in_<N> or <name>:at_<K>"));
    }
    KillPointRule rule;
    rule.name = std::string(item.substr(0, colon));
    absl::string_view trigger = item.substr(colon + 1);
    if (const size_t action = trigger.find(':'); action != absl::string_view::npos) {
      absl::string_view ms = trigger.substr(action + 1);
      trigger = trigger.substr(0, action);
      if (!absl::ConsumePrefix(&ms, "stall_") || !absl::SimpleAtoi(ms, &rule.stall_ms) ||
          rule.stall_ms < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rule \"", item, "\": action \"", item.substr(colon + 1 + action + 1),
            "\" is not stall_<MS> with MS an integer >= 1"));
      }
    }
    if (!ValidName(rule.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule \"", item, "\": name \"", rule.name,
                       "\" must be non-empty letters, digits, '_', '.' or '-'"));
    }
    absl::string_view number = trigger;
    if (absl::ConsumePrefix(&number, "1_in_")) {
      rule.kind = KillPointRule::Kind::kOneIn;
    } else if (absl::ConsumePrefix(&number, "at_")) {
      rule.kind = KillPointRule::Kind::kAt;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("rule \"", item, "\": trigger \"", trigger,
                                                     "\" is neither 1_in_<N> nor at_<K>"));
    }
    if (!absl::SimpleAtoi(number, &rule.n) || rule.n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule \"", item, "\": \"", number, "\" is not an integer >= 1"));
    }
    if (!names.insert(rule.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("kill point \"", rule.name, "\" appears more than once"));
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

void KillPoint(const char* name) {
  State& state = GetState();
  if (!state.error.empty()) {
    WriteStderr(state.error);
    std::abort();
  }
  for (const std::unique_ptr<ArmedRule>& armed : state.rules) {
    if (std::strcmp(armed->rule.name.c_str(), name) != 0) continue;
    const int64_t hit = armed->hits.fetch_add(1, std::memory_order_relaxed) + 1;
    bool fire = false;
    if (armed->rule.kind == KillPointRule::Kind::kAt) {
      fire = hit == armed->rule.n;
    } else {
      absl::MutexLock lock(&state.mu);
      fire = state.rng() % static_cast<uint64_t>(armed->rule.n) == 0;
    }
    if (fire && armed->rule.stall_ms > 0) {
      WriteStderr(absl::StrCat("killpoint ", name, " stalls ", armed->rule.stall_ms, " ms (hit ",
                               hit, ")\n"));
      absl::SleepFor(absl::Milliseconds(armed->rule.stall_ms));
    } else if (fire) {
      Fire(name, hit);
    }
    return;
  }
}

}  // namespace cairn
