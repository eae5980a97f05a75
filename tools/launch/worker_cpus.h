// Which CPUs each worker of a one-machine job runs on.
//
// Left to the kernel's scheduler, the workers of a BSP job, woken together
// when an iteration closes, often land on one CPU and take turns there while
// another CPU idles (seen on 2 CPUs with 1 server + 2 workers: a worker
// waited about 1 ms a step in the run queue). Giving each worker CPUs of its
// own keeps their steps side by side, as binding each rank to its cores does
// for MPI jobs. Servers and the coordinator are not bound: they work mostly
// while the workers wait, on whichever CPU is free.
//
// Thread-safe (a pure function).
#ifndef CAIRN_TOOLS_LAUNCH_WORKER_CPUS_H_
#define CAIRN_TOOLS_LAUNCH_WORKER_CPUS_H_

#include <vector>

namespace cairn::launch {

// The CPUs of each of `num_workers` workers: `allowed` (the CPUs the
// launcher may use, ascending) cut in order into `num_workers` blocks of
// allowed.size() / num_workers CPUs; CPUs left over go to no worker. Empty
// (no worker bound) with fewer than two workers (one worker may use every
// CPU anyway) or more workers than CPUs.
std::vector<std::vector<int>> SplitCpusAmongWorkers(const std::vector<int>& allowed,
                                                    int num_workers);

}  // namespace cairn::launch

#endif  // CAIRN_TOOLS_LAUNCH_WORKER_CPUS_H_
