// The CPUs a process may run on (its scheduler affinity, sched_getaffinity),
// and how a list of them is written: the kernel's cpulist format ("0-3,8",
// as in /proc/<pid>/status Cpus_allowed_list and taskset -c).
#ifndef CAIRN_COMMON_CPU_AFFINITY_H_
#define CAIRN_COMMON_CPU_AFFINITY_H_

#include <string>
#include <vector>

namespace cairn {

// The CPUs the calling thread may run on, ascending; empty when the kernel
// does not say (sched_getaffinity failed). Thread-safe.
std::vector<int> AllowedCpus();

// `cpus` (ascending, no repeats) as a cpulist: runs of consecutive CPUs
// joined with '-', runs separated by ','; "" for none.
std::string FormatCpuList(const std::vector<int>& cpus);

}  // namespace cairn

#endif  // CAIRN_COMMON_CPU_AFFINITY_H_
