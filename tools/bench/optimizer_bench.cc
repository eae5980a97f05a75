// cairn-optimizer-bench: how close the server-side optimizers run to memory
// bandwidth.
//
// Applies each optimizer to one block of --mib MiB of float32 parameters
// (64 MiB by default), and, in the same run over the same bytes, times memcpy
// of the parameters and a plain y += x, the two baselines an in-place update
// is bounded by. Each line is one kernel:
//   ms        median time of one pass over the block, over --reps passes
//   GB/s      effective bandwidth = (bytes read + bytes written) / time,
//             1 GB = 1e9 bytes; bytes count each array once per pass:
//             memcpy   reads x, writes y                 (2 x block)
//             y += x   reads x and y, writes y           (3 x block)
//             sgd      reads w and g, writes w           (3 x block)
//             momentum, adagrad: + one slot read/written (5 x block)
//             adam     + two slots read/written          (7 x block)
//   best GB/s from the fastest pass
//   of y+=x   median GB/s relative to y += x's
// "finite check" is the servers' test of a pushed gradient for NaN and Inf
// (server/shard/table.h AllFinite), which reads the block once (1 x block).
// "rows of 64" lines apply the same optimizer one 64-float embedding row per
// call, the way sparse pushes reach it, to show the per-call overhead.
// Single-threaded; run on an idle machine for stable numbers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cairn/v1/types.pb.h"
#include "server/optimizer/optimizer.h"
#include "server/shard/table.h"

namespace cairn {
namespace {

struct Result {
  double median_s;
  double best_s;
};

// Times `reps` calls of `pass` after one untimed warm-up call.
Result Time(int reps, const std::function<void(int64_t)>& pass) {
  pass(1);
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass(r + 2);
    const auto end = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2], seconds.front()};
}

// Built per CPU like the optimizer loops (AVX2 clone and SSE2 baseline), so
// the baseline gets the same vector width as the kernels it is compared with.
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
__attribute__((noinline, target_clones("avx2", "default")))
#else
__attribute__((noinline))
#endif
void AddInPlace(float* __restrict y,
                                          const float* __restrict x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = y[i] + x[i];
}

void Report(const char* name, double bytes, const Result& r, double baseline_gbps) {
  const double gbps = bytes / r.median_s / 1e9;
  std::printf("%-26s %9.2f %9.2f %9.2f %9.2f\n", name, r.median_s * 1e3, gbps,
              bytes / r.best_s / 1e9, baseline_gbps > 0 ? gbps / baseline_gbps : 1.0);
}

v1::OptimizerSpec Spec(v1::OptimizerKind kind) {
  v1::OptimizerSpec spec;
  spec.set_kind(kind);
  spec.set_learning_rate(1e-3f);
  spec.set_beta1(0.9f);
  spec.set_beta2(0.999f);
  spec.set_epsilon(1e-8f);
  spec.set_initial_accumulator(0.1f);
  return spec;
}

int Run(size_t mib, int reps) {
  const size_t n = mib * (size_t{1} << 20) / sizeof(float);
  const double block = static_cast<double>(n) * sizeof(float);
  std::vector<float> x(n), y(n), w(n), g(n), slots(2 * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    x[i] = dist(rng);
    g[i] = dist(rng);
  }
  std::copy(x.begin(), x.end(), w.begin());
  std::fill(y.begin(), y.end(), 0.0f);

  std::printf("block: %zu MiB of float32 (%zu elements), %d timed passes each\n",
              mib, n, reps);
  std::printf("%-26s %9s %9s %9s %9s\n", "kernel", "ms", "GB/s", "best GB/s",
              "of y+=x");
  const Result copy = Time(reps, [&](int64_t) {
    std::memcpy(y.data(), x.data(), n * sizeof(float));
  });
  const Result add = Time(reps, [&](int64_t) { AddInPlace(y.data(), x.data(), n); });
  const double add_gbps = 3 * block / add.median_s / 1e9;
  Report("memcpy", 2 * block, copy, add_gbps);
  Report("y += x", 3 * block, add, add_gbps);
  // The servers' finiteness check of a pushed gradient (reads it once).
  bool finite = true;
  const Result check = Time(reps, [&](int64_t) {
    finite &= AllFinite(reinterpret_cast<const char*>(g.data()), n);
  });
  Report(finite ? "finite check" : "finite check (found one)", block, check, add_gbps);

  struct Variant {
    const char* name;
    v1::OptimizerSpec spec;
  };
  std::vector<Variant> variants = {{"sgd", Spec(v1::OPTIMIZER_KIND_SGD)},
                                   {"sgd momentum", Spec(v1::OPTIMIZER_KIND_SGD)},
                                   {"sgd nesterov", Spec(v1::OPTIMIZER_KIND_SGD)},
                                   {"adagrad", Spec(v1::OPTIMIZER_KIND_ADAGRAD)},
                                   {"adam", Spec(v1::OPTIMIZER_KIND_ADAM)}};
  variants[1].spec.set_momentum(0.9f);
  variants[2].spec.set_momentum(0.9f);
  variants[2].spec.set_nesterov(true);
  for (const Variant& v : variants) {
    auto made = MakeOptimizer(v.spec);
    if (!made.ok()) {
      std::fprintf(stderr, "%s: %s\n", v.name, made.status().ToString().c_str());
      return 1;
    }
    const Optimizer& opt = **made;
    const int s = opt.SlotsPerElement();
    const double bytes = (3.0 + 2.0 * s) * block;
    opt.InitSlots(slots.data(), n);
    Report(v.name, bytes,
           Time(reps, [&](int64_t step) {
             opt.Apply(w.data(), slots.data(), g.data(), n, step);
           }),
           add_gbps);
    // Rows keep their slots row by row (s * 64 floats each), a different
    // layout from the whole block's: start them afresh.
    opt.InitSlots(slots.data(), n);
    constexpr size_t kRow = 64;
    const std::string rows_name = std::string(v.name) + " rows of 64";
    Report(rows_name.c_str(), bytes,
           Time(reps, [&](int64_t step) {
             for (size_t off = 0; off + kRow <= n; off += kRow) {
               opt.Apply(w.data() + off, slots.data() + s * off, g.data() + off,
                         kRow, step);
             }
           }),
           add_gbps);
  }
  // Keep the results observable so no pass can be optimized away.
  double checksum = 0;
  for (size_t i = 0; i < n; i += 4096) checksum += w[i] + y[i];
  std::printf("checksum %.6g\n", checksum);
  return 0;
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  CLI::App app{"Optimizer update throughput next to memcpy and y += x."};
  size_t mib = 64;
  int reps = 21;
  app.add_option("--mib", mib, "parameter block size in MiB")->check(CLI::Range(1, 4096));
  app.add_option("--reps", reps, "timed passes per kernel")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  return cairn::Run(mib, reps);
}
