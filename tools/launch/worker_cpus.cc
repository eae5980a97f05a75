#include "tools/launch/worker_cpus.h"

#include <cstddef>

namespace cairn::launch {

std::vector<std::vector<int>> SplitCpusAmongWorkers(const std::vector<int>& allowed,
                                                    int num_workers) {
  if (num_workers < 2 || static_cast<size_t>(num_workers) > allowed.size()) return {};
  const size_t per_worker = allowed.size() / static_cast<size_t>(num_workers);
  std::vector<std::vector<int>> out(static_cast<size_t>(num_workers));
  for (size_t w = 0; w < out.size(); ++w) {
    out[w].assign(allowed.begin() + static_cast<ptrdiff_t>(w * per_worker),
                  allowed.begin() + static_cast<ptrdiff_t>((w + 1) * per_worker));
  }
  return out;
}

}  // namespace cairn::launch
