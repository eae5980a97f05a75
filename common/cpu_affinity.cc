#include "common/cpu_affinity.h"

#include <sched.h>

#include "absl/strings/str_cat.h"

namespace cairn {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t end = i + 1;
    while (end < cpus.size() && cpus[end] == cpus[end - 1] + 1) ++end;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, cpus[i]);
    if (end - i > 1) absl::StrAppend(&out, "-", cpus[end - 1]);
    i = end;
  }
  return out;
}

}  // namespace cairn
