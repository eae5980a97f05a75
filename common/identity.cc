#include "common/identity.h"

#include <netdb.h>
#include <sys/socket.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/net.h"

namespace cairn {
namespace {

// A non-negative integer from `text`; InvalidArgument naming `what`.
absl::StatusOr<int> NonNegative(const std::string& text, const std::string& what) {
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=\"", text, "\" is not a non-negative integer"));
  }
  return value;
}

// The ordinal N of a StatefulSet pod's hostname "<name>-N", if it has one.
std::optional<std::string> HostnameOrdinal(const std::string& hostname) {
  const size_t dash = hostname.rfind('-');
  if (dash == std::string::npos || dash + 1 == hostname.size()) return std::nullopt;
  const std::string tail = hostname.substr(dash + 1);
  for (char c : tail) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return tail;
}

std::string Hostname(const EnvLookup& env) {
  if (std::optional<std::string> h = env("HOSTNAME"); h.has_value() && !h->empty()) return *h;
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0) return "";
  return buffer;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

absl::StatusOr<ResolvedIndex> ResolveIndex(const std::string& role, int flag_value,
                                           const std::string& flag_name, int count,
                                           const EnvLookup& env) {
  ResolvedIndex r;
  if (flag_value >= 0) {
    r = {flag_value, flag_name};
  } else if (std::optional<std::string> v = env("CAIRN_INDEX"); v.has_value()) {
    absl::StatusOr<int> i = NonNegative(*v, "CAIRN_INDEX");
    if (!i.ok()) return i.status();
    r = {*i, "CAIRN_INDEX"};
  } else if (std::optional<std::string> v = env("JOB_COMPLETION_INDEX"); v.has_value()) {
    absl::StatusOr<int> i = NonNegative(*v, "JOB_COMPLETION_INDEX");
    if (!i.ok()) return i.status();
    r = {*i, "JOB_COMPLETION_INDEX"};
  } else if (std::optional<std::string> ordinal =
                 env("KUBERNETES_SERVICE_HOST").has_value() ? HostnameOrdinal(Hostname(env))
                                                            : std::nullopt;
             ordinal.has_value()) {
    absl::StatusOr<int> i = NonNegative(*ordinal, "the hostname's StatefulSet ordinal");
    if (!i.ok()) return i.status();
    r = {*i, absl::StrCat("the StatefulSet ordinal of hostname ", Hostname(env))};
  } else if (std::optional<std::string> v = env("SLURM_PROCID"); v.has_value()) {
    absl::StatusOr<int> rank = NonNegative(*v, "SLURM_PROCID");
    if (!rank.ok()) return rank.status();
    int offset = 0;
    if (std::optional<std::string> o = env("CAIRN_INDEX_OFFSET"); o.has_value()) {
      absl::StatusOr<int> parsed = NonNegative(*o, "CAIRN_INDEX_OFFSET");
      if (!parsed.ok()) return parsed.status();
      offset = *parsed;
    }
    if (*rank < offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SLURM_PROCID=", *rank, " is below CAIRN_INDEX_OFFSET=", offset, ": this task is not a ",
          role, " (the offset is the first rank of the ", role, "s)"));
    }
    r = {*rank - offset,
         offset == 0 ? "SLURM_PROCID" : absl::StrCat("SLURM_PROCID - CAIRN_INDEX_OFFSET")};
  } else {
    return r;  // the coordinator picks
  }
  if (r.index >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        role, " index ", r.index, " (from ", r.source, ") is out of range: cluster.", role,
        "s is ", count, " (indices 0..", count - 1, ")"));
  }
  return r;
}

absl::StatusOr<Sourced> ResolveCoordinator(const std::string& flag_value,
                                           const std::string& yaml_value, const EnvLookup& env) {
  Sourced s;
  if (!flag_value.empty()) {
    s = {flag_value, "--coordinator"};
  } else if (std::optional<std::string> v = env("CAIRN_COORDINATOR"); v.has_value()) {
    s = {*v, "CAIRN_COORDINATOR"};
  } else {
    s = {yaml_value, "cluster.coordinator"};
  }
  absl::StatusOr<HostPort> hp = ParseHostPort(s.value, s.source);
  if (!hp.ok()) return hp.status();
  return s;
}

Sourced ResolveAdvertiseHost(const std::string& flag_value, const std::string& listen_host,
                             const EnvLookup& env) {
  if (!flag_value.empty()) return {flag_value, "--advertise"};
  if (std::optional<std::string> v = env("CAIRN_ADVERTISE_HOST"); v.has_value() && !v->empty()) {
    return {*v, "CAIRN_ADVERTISE_HOST"};
  }
  return {listen_host, "--listen"};
}

std::string DialableAddress(const std::string& bound, const std::string& host) {
  absl::StatusOr<HostPort> hp = ParseHostPort(bound, "address", /*allow_zero_port=*/true);
  if (!hp.ok() || host.empty()) return bound;
  if (hp->host != "0.0.0.0" && hp->host != "::") return bound;
  return FormatHostPort(host, hp->port);
}

std::string OwnHost(const EnvLookup& env) {
  if (std::optional<std::string> v = env("CAIRN_ADVERTISE_HOST"); v.has_value() && !v->empty()) {
    return *v;
  }
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0) return "";
  return buffer;
}

absl::Status WaitUntilResolvable(const std::string& host_port, const std::string& source,
                                 absl::Duration timeout) {
  absl::StatusOr<HostPort> hp = ParseHostPort(host_port, source);
  if (!hp.ok()) return hp.status();
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(hp->host.c_str(), nullptr, &hints, &found);
    if (rc == 0) {
      ::freeaddrinfo(found);
      return absl::OkStatus();
    }
    // EAI_AGAIN / EAI_NONAME: a record may appear shortly; anything else too.
    if (absl::Now() + absl::Milliseconds(250) >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "the coordinator's host \"", hp->host, "\" (from ", source, ") does not resolve: ",
          gai_strerror(rc), " (retried for ", absl::FormatDuration(timeout), ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace cairn
