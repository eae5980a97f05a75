// BspTableSum: the sum of one table's BSP iteration is the same bits
// whatever order the gradients arrive in, workers 0 and 1's first gradients
// of a dense table go straight into the running sum (no buffer of their
// own), a push's rows added through AddRows (split over two threads when
// large) give the bits of Add in order, and a replica transfer of a
// half-summed iteration ends in the same bits.
#include "server/shard/bsp_table_sum.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_affinity.h"
#include "server/shard/fork_join.h"

namespace cairn {
namespace {

constexpr uint32_t kLength = 4;

// One gradient of a row: magnitudes from 1e-3 to 1e7, so that summing in
// another order rounds differently.
struct Grad {
  uint32_t worker;
  Key key;
  std::vector<float> values;
};

Grad G(uint32_t worker, Key key, float scale) {
  std::vector<float> v;
  for (uint32_t i = 0; i < kLength; ++i) {
    v.push_back(scale * (1.0f + 0.1f * static_cast<float>(i) + 0.01f * static_cast<float>(worker)));
  }
  return Grad{worker, key, v};
}

std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

// The closed rows by key, as bits.
std::map<Key, std::vector<uint32_t>> Closed(BspTableSum& sum, bool mean) {
  const GradBuffer& rows = sum.Close(mean);
  std::map<Key, std::vector<uint32_t>> out;
  for (const GradBuffer::Row& r : rows.rows()) {
    out[r.key] = Bits(std::vector<float>(rows.RowData(r), rows.RowData(r) + r.length));
  }
  return out;
}

std::map<Key, std::vector<uint32_t>> SumInOrder(const std::vector<Grad>& arrivals, bool fold,
                                                bool mean) {
  std::vector<GradBuffer> spare;
  BspTableSum sum(fold, &spare, 0, 0);
  for (const Grad& g : arrivals) sum.Add(g.worker, g.key, g.values.data(), kLength);
  return Closed(sum, mean);
}

// The header's formulas written out. fold: per row, (g0 + g1) + r0 + r1 +
// g2 + ... with g0 and g1 the first gradients of workers 0 and 1, r0 and r1
// their later ones (in their order), and each other worker's gradients
// summed in its order first. Without fold: every worker's gradients summed
// in its order, then the workers in id order.
std::vector<float> Formula(const std::vector<Grad>& grads, Key key, bool fold) {
  auto add = [](std::vector<float>* acc, const std::vector<float>& v) {
    if (acc->empty()) {
      *acc = v;
    } else {
      for (size_t i = 0; i < v.size(); ++i) (*acc)[i] += v[i];
    }
  };
  std::vector<float> g01, r0, r1;
  std::map<uint32_t, std::vector<float>> own;  // worker -> its gradients, summed
  bool first0 = true, first1 = true;
  for (const Grad& g : grads) {
    if (g.key != key) continue;
    if (fold && g.worker == 0) {
      add(first0 ? &g01 : &r0, g.values);
      first0 = false;
    } else if (fold && g.worker == 1) {
      add(first1 ? &g01 : &r1, g.values);
      first1 = false;
    } else {
      add(&own[g.worker], g.values);
    }
  }
  std::vector<float> result;
  for (const std::vector<float>* t : {&g01, &r0, &r1}) {
    if (!t->empty()) add(&result, *t);
  }
  for (const auto& [worker, t] : own) add(&result, t);
  return result;
}

TEST_CASE("a BSP table's sum is the same bits in every arrival order", "[shard][bsp]") {
  // Workers 0, 1, 2 and 3 on rows 7 and 9; worker 0 sends row 7 twice,
  // worker 2 sends row 9 twice, worker 1 has no row 9.
  const std::vector<Grad> grads = {G(0, 7, 1e7f),  G(1, 7, 1e-3f), G(2, 7, -1e7f), G(3, 7, 3.0f),
                                   G(0, 7, 0.7f),  G(0, 9, -1e7f), G(2, 9, 1e-3f), G(2, 9, 1e7f),
                                   G(3, 9, 0.5f)};
  const bool fold = GENERATE(true, false);
  const bool mean = GENERATE(true, false);
  INFO("fold " << fold << " mean " << mean);

  std::map<Key, std::vector<uint32_t>> want;
  for (Key key : {Key{7}, Key{9}}) {
    std::vector<float> f = Formula(grads, key, fold);
    if (mean) {
      for (float& v : f) v *= 1.0f / 4.0f;  // four workers pushed
    }
    want[key] = Bits(f);
  }
  // Random arrival orders that keep each worker's own gradients in the
  // order it sent them.
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint32_t> slots;
    for (const Grad& g : grads) slots.push_back(g.worker);
    std::shuffle(slots.begin(), slots.end(), rng);
    std::map<uint32_t, size_t> next;  // worker -> its next gradient
    std::vector<Grad> arrivals;
    for (uint32_t w : slots) {
      size_t& i = next[w];
      while (grads[i].worker != w) ++i;
      arrivals.push_back(grads[i++]);
    }
    INFO("round " << round);
    REQUIRE(SumInOrder(arrivals, fold, mean) == want);
  }
}

TEST_CASE("workers 0 and 1's first gradients of a dense table need no buffer of their own",
          "[shard][bsp]") {
  std::vector<GradBuffer> spare;
  BspTableSum sum(/*fold_first_two=*/true, &spare, 2, 2 * kLength);
  const Grad a = G(1, 0, 2.0f), b = G(0, 0, 3.0f), c = G(0, 1, 5.0f);
  sum.Add(a.worker, a.key, a.values.data(), kLength);
  sum.Add(b.worker, b.key, b.values.data(), kLength);
  sum.Add(c.worker, c.key, c.values.data(), kLength);
  CHECK(sum.waiting().empty());
  CHECK(sum.running_sum().rows().size() == 2);
  CHECK(sum.FirstOf(0) == (BspTableSum::kWorker0 | BspTableSum::kWorker1));
  CHECK(sum.FirstOf(1) == BspTableSum::kWorker0);
  CHECK(sum.Contributors() == 2);

  // A second gradient of a row goes to its worker's buffer; the workers
  // are still two.
  sum.Add(b.worker, b.key, b.values.data(), kLength);
  CHECK(sum.waiting().size() == 1);
  CHECK(sum.Contributors() == 2);

  // Recycled: the two buffers in use wait for the next iteration, which
  // takes them instead of allocating.
  (void)sum.Close(true);
  sum.Recycle();
  CHECK(spare.size() == 2);
  CHECK(sum.running_sum().empty());
  CHECK(sum.Contributors() == 0);
  sum.Add(a.worker, a.key, a.values.data(), kLength);
  CHECK(spare.size() == 1);
  CHECK(sum.Close(false).empty() == false);
}

// Workers 0, 1 and 2 push a 4 MiB dense table (chunks of 16384 floats, the
// last short); worker 1's push repeats a chunk, worker 0 pushes a second
// time. Through AddRows with a helper the rows, the running sum's marks and
// the mean are the bits of Add in order.
TEST_CASE("AddRows split over two threads sums a push as Add does", "[shard][bsp][fork_join]") {
  constexpr uint32_t kChunk = 16384;
  constexpr uint64_t kFloats = (1 << 20) + 5;
  const Key chunks = (kFloats + kChunk - 1) / kChunk;
  auto length_of = [&](Key k) {
    return static_cast<uint32_t>(std::min<uint64_t>(kChunk, kFloats - k * kChunk));
  };
  struct Push {
    uint32_t worker;
    std::vector<Key> keys;
    std::vector<float> grads;
  };
  std::vector<Push> pushes;
  for (uint32_t worker : {0u, 1u, 2u, 0u}) {
    Push p{worker, {}, {}};
    for (Key k = 0; k < chunks; ++k) p.keys.push_back(k);
    if (worker == 1) p.keys.push_back(3);  // a repeat waits in worker 1's buffer
    for (Key k : p.keys) {
      for (uint32_t j = 0; j < length_of(k); ++j) {
        p.grads.push_back(std::ldexp(1.0f + 0.001f * static_cast<float>(j % 97),
                                     static_cast<int>(worker * 7 + k % 5) - 10));
      }
    }
    pushes.push_back(std::move(p));
  }
  ForkJoin helper(AllowedCpus());  // on one CPU too: the pieces take turns
  std::vector<GradBuffer> spare_a, spare_b;
  BspTableSum in_order(true, &spare_a, chunks, kFloats), split(true, &spare_b, chunks, kFloats);
  for (const Push& p : pushes) {
    const float* g = p.grads.data();
    for (Key k : p.keys) {
      in_order.Add(p.worker, k, g, length_of(k));
      g += length_of(k);
    }
    const std::string keys(reinterpret_cast<const char*>(p.keys.data()),
                           p.keys.size() * sizeof(Key));
    split.AddRows(p.worker, keys, p.keys.size(), p.grads.data(), length_of, &helper);
  }
  REQUIRE(split.running_sum().rows().size() == static_cast<size_t>(chunks));
  for (size_t r = 0; r < static_cast<size_t>(chunks); ++r) {
    CHECK(split.FirstOf(r) == in_order.FirstOf(r));
  }
  CHECK(split.waiting().size() == in_order.waiting().size());
  CHECK(split.Contributors() == 3);
  CHECK(Closed(split, true) == Closed(in_order, true));
}

TEST_CASE("a replica transfer of a half-summed BSP iteration ends in the same bits",
          "[shard][bsp]") {
  const std::vector<Grad> before = {G(0, 3, 1e7f), G(2, 3, 0.7f), G(0, 3, -1e7f), G(3, 4, 1.0f)};
  const std::vector<Grad> after = {G(1, 3, 1e-3f), G(1, 4, 3.0f), G(2, 4, -2.0f)};
  std::vector<Grad> all = before;
  all.insert(all.end(), after.begin(), after.end());
  const bool mean = GENERATE(true, false);

  std::vector<GradBuffer> spare_a, spare_b;
  BspTableSum primary(true, &spare_a, 0, 0);
  for (const Grad& g : before) primary.Add(g.worker, g.key, g.values.data(), kLength);

  // What ReplicaEnd carries, read back on the joiner.
  BspTableSum joiner(true, &spare_b, 0, 0);
  const GradBuffer& running = primary.running_sum();
  for (size_t i = 0; i < running.rows().size(); ++i) {
    const GradBuffer::Row& r = running.rows()[i];
    joiner.AddToRunningSum(r.key, running.RowData(r), r.length, primary.FirstOf(i));
  }
  for (const auto& [worker, rows] : primary.waiting()) {
    for (const GradBuffer::Row& r : rows.rows()) {
      joiner.AddWaiting(worker, r.key, rows.RowData(r), r.length);
    }
  }
  for (const Grad& g : after) {
    primary.Add(g.worker, g.key, g.values.data(), kLength);
    joiner.Add(g.worker, g.key, g.values.data(), kLength);
  }
  CHECK(joiner.Contributors() == 4);
  const std::map<Key, std::vector<uint32_t>> want = Closed(primary, mean);
  CHECK(Closed(joiner, mean) == want);
  CHECK(want.at(3) == Bits([&] {
          std::vector<float> f = Formula(all, 3, /*fold=*/true);
          if (mean) {
            for (float& v : f) v *= 1.0f / 4.0f;
          }
          return f;
        }()));
}

}  // namespace
}  // namespace cairn
