// cairn-cold-bench: what a sparse table's cold tier (TableSpec.cold_tier,
// server/shard/cold_rows.h) costs a pull or a push that misses memory.
//
// One process, one thread. Two tables of the same rows (width --width,
// adagrad): the reference holds all --rows rows in memory; the tiered one
// has capacity_rows --capacity and a cold tier on RocksDB (in --dir, with
// --cold-memory bytes of RocksDB memory), so all but the most recent rows
// live there. Each line times batches of --batch distinct random keys:
//   pull, in memory        the reference table (every row in memory)
//   pull, hot rows         the tiered table, keys among its rows in memory
//   pull, cold rows        the tiered table, keys among its cold rows
//                          (read from RocksDB, left there)
//   push, in memory        the reference table
//   push, cold rows        the tiered table, keys among its cold rows: each
//                          row comes back into memory and as many go out
// rows/s is the median over --reps batches; "/ memory" divides it by the
// in-memory line of the same operation. The resident memory of the process
// is printed after the fill and at the end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "server/shard/cold_rows.h"
#include "server/shard/sparse_table.h"
#include "server/shard/table.h"

namespace cairn {
namespace {

constexpr uint32_t kPartitions = 8;

v1::TableSpec Spec(int width, uint64_t capacity) {
  v1::TableSpec spec;
  spec.set_name("emb");
  spec.set_kind(v1::TABLE_KIND_SPARSE);
  spec.set_width(width);
  spec.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_ADAGRAD);
  spec.mutable_optimizer()->set_learning_rate(0.05f);
  spec.mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  if (capacity > 0) {
    spec.set_capacity_rows(capacity);
    spec.set_evict_to(0.9);
    spec.set_cold_tier(true);
  }
  return spec;
}

double ResidentMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// Median rows/s of `reps` calls of `batch`, each on `n` rows.
double RowsPerSecond(int reps, size_t n, const std::function<void(int)>& batch) {
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    batch(r);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return static_cast<double>(n) / seconds[seconds.size() / 2];
}

// `count` distinct keys drawn from [lo, hi), as the key bytes of a request.
std::string DrawKeys(std::mt19937_64& random, Key lo, Key hi, size_t count) {
  std::vector<Key> keys;
  std::uniform_int_distribution<Key> pick(lo, hi - 1);
  while (keys.size() < count) {
    keys.push_back(pick(random));
    if (keys.size() == count) {
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    }
  }
  std::shuffle(keys.begin(), keys.end(), random);
  return KeysToBytes(keys);
}

int Run(int width, uint64_t rows, uint64_t capacity, size_t batch, int reps,
        const std::string& dir, uint64_t cold_memory) {
  auto store = ColdRowStore::Open(dir, cold_memory);
  if (!store.ok()) {
    std::fprintf(stderr, "cairn-cold-bench: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const std::vector<bool> owned(kPartitions, true);
  auto reference = Table::Create(Spec(width, 0), kPartitions, owned);
  auto tiered = Table::Create(Spec(width, capacity), kPartitions, owned, store->get());
  if (!reference.ok() || !tiered.ok()) {
    std::fprintf(stderr, "cairn-cold-bench: %s\n",
                 (reference.ok() ? tiered.status() : reference.status()).ToString().c_str());
    return 1;
  }
  // Fill both with keys 0 .. rows-1 in ascending batches: the tiered table
  // keeps the most recent ones in memory, the rest go cold.
  const std::vector<float> grads(batch * width, 0.01f);
  const absl::string_view grad_bytes(reinterpret_cast<const char*>(grads.data()),
                                     grads.size() * sizeof(float));
  for (Key k = 0; k < rows; k += batch) {
    std::vector<Key> keys;
    for (Key j = k; j < std::min<Key>(k + batch, rows); ++j) keys.push_back(j);
    const std::string key_bytes = KeysToBytes(keys);
    const absl::string_view values = grad_bytes.substr(0, keys.size() * width * sizeof(float));
    (*reference)->ApplyUnique(key_bytes, keys.size(), values);
    (*tiered)->ApplyUnique(key_bytes, keys.size(), values);
  }
  const auto& sparse = dynamic_cast<const SparseTable&>(**tiered);
  std::printf("rows %llu of width %d (adagrad); tiered: capacity %llu, %llu in memory, %llu "
              "cold; RocksDB memory within %llu bytes\n",
              static_cast<unsigned long long>(rows), width,
              static_cast<unsigned long long>(capacity),
              static_cast<unsigned long long>((*tiered)->NumKeys()),
              static_cast<unsigned long long>(sparse.ColdRows()),
              static_cast<unsigned long long>(cold_memory));
  std::printf("resident memory after the fill: %.0f MiB\n", ResidentMiB());
  // Under LRU with ascending fills the rows in memory are the newest ones.
  const Key hot_lo = rows - (*tiered)->NumKeys() * 9 / 10;
  const Key cold_hi = rows - (*tiered)->NumKeys() - batch;
  std::mt19937_64 random(7);
  std::vector<std::string> hot_keys, cold_keys;
  for (int r = 0; r < reps; ++r) {
    hot_keys.push_back(DrawKeys(random, hot_lo, rows, batch));
    cold_keys.push_back(DrawKeys(random, 0, cold_hi, batch));
  }
  std::vector<float> out(batch * width);
  double sink = 0;
  auto pull = [&](const Table& t, const std::vector<std::string>& keys) {
    return RowsPerSecond(reps, batch, [&](int r) {
      t.ReadTo(keys[r], batch, out.data());
      sink += out[0];
    });
  };
  const double pull_memory = pull(**reference, cold_keys);
  const double pull_hot = pull(**tiered, hot_keys);
  const double pull_cold = pull(**tiered, cold_keys);
  // Pushes to cold rows: distinct sets per batch, so every row is cold
  // when pushed.
  std::vector<std::string> push_keys;
  std::vector<Key> order;
  for (Key k = 0; k < cold_hi; ++k) order.push_back(k);
  std::shuffle(order.begin(), order.end(), random);
  for (int r = 0; r < reps; ++r) {
    push_keys.push_back(KeysToBytes(std::vector<Key>(order.begin() + r * batch,
                                                     order.begin() + (r + 1) * batch)));
  }
  const double push_memory = RowsPerSecond(reps, batch, [&](int r) {
    (*reference)->ApplyUnique(push_keys[r], batch, grad_bytes);
  });
  const double push_cold = RowsPerSecond(reps, batch, [&](int r) {
    (*tiered)->ApplyUnique(push_keys[r], batch, grad_bytes);
  });
  std::printf("%-22s %14s %10s\n", "case", "rows/s", "/ memory");
  std::printf("%-22s %14.0f %10.2f\n", "pull, in memory", pull_memory, 1.0);
  std::printf("%-22s %14.0f %10.2f\n", "pull, hot rows", pull_hot, pull_hot / pull_memory);
  std::printf("%-22s %14.0f %10.2f\n", "pull, cold rows", pull_cold, pull_cold / pull_memory);
  std::printf("%-22s %14.0f %10.2f\n", "push, in memory", push_memory, 1.0);
  std::printf("%-22s %14.0f %10.2f\n", "push, cold rows", push_cold, push_cold / push_memory);
  std::printf("resident memory at the end: %.0f MiB (checksum %g)\n", ResidentMiB(), sink);
  return 0;
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  CLI::App app{"Pulls and pushes of rows in a sparse table's cold tier, next to rows in memory."};
  int width = 16;
  uint64_t rows = 2000000, capacity = 100000;
  size_t batch = 4096;
  int reps = 30;
  std::string dir;
  uint64_t cold_memory = cairn::ColdRowStore::kDefaultMemoryBytes;
  app.add_option("--width", width, "floats per row")->check(CLI::Range(1, 1024));
  app.add_option("--rows", rows, "rows in each table")->check(CLI::Range(100000, 100000000));
  app.add_option("--capacity", capacity, "the tiered table's capacity_rows")
      ->check(CLI::Range(10000, 10000000));
  app.add_option("--batch", batch, "distinct keys per pull or push")->check(CLI::Range(1, 65536));
  app.add_option("--reps", reps, "timed batches per case")->check(CLI::Range(3, 1000));
  app.add_option("--dir", dir, "the cold tier's directory (default: a new one under $TMPDIR)");
  app.add_option("--cold-memory", cold_memory, "RocksDB's memory budget in bytes");
  CLI11_PARSE(app, argc, argv);
  if (capacity * 2 > rows) {
    std::fprintf(stderr, "cairn-cold-bench: --rows must be at least twice --capacity\n");
    return 2;
  }
  if (static_cast<uint64_t>(reps) * batch + capacity + batch > rows) {
    std::fprintf(stderr, "cairn-cold-bench: --rows too small for --reps batches of cold rows\n");
    return 2;
  }
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/cairn-cold-bench-",
                       getpid());
  }
  const int code = cairn::Run(width, rows, capacity, batch, reps, dir, cold_memory);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return code;
}
