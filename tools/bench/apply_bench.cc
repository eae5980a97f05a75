// cairn-apply-bench: how a server applies pushes from several threads.
//
// One in-process Shard (server/shard/shard.h) holds a dense float32 table of
// 2 x --mib MiB under ASP, cut into 64 KiB chunks over 2 partitions. Worker 0
// pushes the chunks of partition 0, worker 1 those of partition 1, each push
// carrying --mib MiB of SGD gradients; every push goes through Shard::Push
// as a server's gRPC thread calls it (checks, sequence window, finiteness,
// apply). In the same run:
//   1 thread     both workers' pushes, one after the other
//   2 threads    each worker's pushes on a thread of its own, at once
//   y += x       a plain loop over the same bytes per push (the bound an
//                in-place SGD update has: read x and y, write y)
//   y += x, two pairs   the same loop over two pairs of buffers in turn, as
//                the pushes of 1 thread alternate between two requests'
//                values and two partitions' tables: the same memory in use
//   y += x, one pair per thread   the two pairs at once on two threads: what
//                two cores of this machine give a loop bound by memory
//                (below 2 where the two share a core's resources)
// and prints pushes/s, apply bandwidth (value bytes applied per second) and
// the ratios: 2 threads over 1, 1 thread's bandwidth over each y += x's,
// y += x's 2 threads over 1, and the apply's scaling over that one.
// Medians of --reps rounds of --pushes pushes per worker.
//
// With --sparse, a sparse push instead: one in-process Shard holds a sparse
// float32 table of width 64 under ASP (SGD), and one worker pushes the same
// 4096 distinct rows (1 MiB of gradients; cairn-bench's sparse case) again
// and again, through Shard::Push with the values beside the request, as a
// server's gRPC thread hands them on. In the same run:
//   received pieces   the values in pieces of 65,531 bytes, each 1 to 3
//                     bytes past a float's alignment, as gRPC's slices put
//                     them (rows cut by a piece's end, every row misaligned)
//   one buffer        the same values in one aligned piece
//   rows y += x       each row's 64 gradients added into a row of a plain
//                     array at the row's slot: the bound an in-place SGD on
//                     rows has
// and prints pushes/s, apply bandwidth and each apply's over y += x's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "common/daemon.h"
#include "common/value_pieces.h"
#include "server/shard/shard.h"

namespace cairn {
namespace {

constexpr int64_t kChunk = 16384;  // floats: the default chunk (64 KiB)

v1::JobSpec MakeJob(int64_t floats) {
  v1::JobSpec job;
  v1::TableSpec* t = job.add_tables();
  t->set_name("w");
  t->set_id(0);
  t->set_kind(v1::TABLE_KIND_DENSE);
  t->add_shape(floats);
  t->set_chunk_size(kChunk);
  t->mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  t->mutable_optimizer()->set_learning_rate(1e-6f);
  t->mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  t->set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  t->set_consistency(v1::CONSISTENCY_ASP);
  t->set_aggregation(v1::AGGREGATION_MEAN);
  job.set_num_partitions(2);
  job.set_num_workers(2);
  job.set_num_servers(1);
  return job;
}

v1::PartitionMap MakeMap() {
  v1::PartitionMap map;
  map.set_version(1);
  map.set_num_partitions(2);
  map.set_ready(true);
  for (uint32_t p = 0; p < 2; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(0);
    a->set_group(0);
  }
  for (uint32_t w = 0; w < 2; ++w) {
    v1::Member* m = map.add_workers();
    m->set_id(w);
    m->set_role(v1::MEMBER_ROLE_WORKER);
    m->set_state(v1::MEMBER_STATE_ALIVE);
    m->set_incarnation(1);
  }
  return map;
}

// Worker `w`'s push of every chunk of partition `w`.
v1::PushRequest MakePush(uint32_t w, int64_t chunks_per_partition, int64_t total_floats) {
  v1::PushRequest r;
  r.set_map_version(1);
  r.set_worker_id(w);
  r.set_incarnation(1);
  r.set_group(0);
  v1::TableValues* tv = r.add_tables();
  tv->set_table_id(0);
  tv->set_table("w");
  tv->set_dtype(v1::DTYPE_FLOAT32);
  tv->add_shape(total_floats);
  std::vector<Key> keys;
  for (int64_t c = 0; c < chunks_per_partition; ++c) keys.push_back(w * chunks_per_partition + c);
  tv->set_keys(KeysToBytes(keys));
  tv->set_values(FloatsToBytes(std::vector<float>(chunks_per_partition * kChunk, 0.001f)));
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Body>
double SecondsOf(Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr int64_t kSparseRows = 4096, kSparseWidth = 64;

v1::JobSpec MakeSparseJob() {
  v1::JobSpec job = MakeJob(kChunk);
  v1::TableSpec* t = job.mutable_tables(0);
  t->set_name("emb");
  t->set_kind(v1::TABLE_KIND_SPARSE);
  t->clear_shape();
  t->clear_chunk_size();
  t->set_width(kSparseWidth);
  job.set_num_workers(1);
  return job;
}

// Values held at odd addresses, in pieces cut where no row ends.
struct ReceivedValues {
  std::vector<std::string> slabs;
  ValuePieces pieces;
};

ReceivedValues CutAsReceived(const std::string& values) {
  constexpr size_t kPiece = 65531;  // bytes: neither rows nor floats end there
  ReceivedValues received;
  for (size_t at = 0, k = 0; at < values.size(); at += kPiece, ++k) {
    const size_t n = std::min(kPiece, values.size() - at);
    const size_t shift = 1 + k % 3;  // a std::string's data is 16-byte aligned
    received.slabs.push_back(std::string(shift, '\0') + values.substr(at, n));
  }
  for (size_t k = 0; k < received.slabs.size(); ++k) {
    const std::string& slab = received.slabs[k];
    const size_t shift = 1 + k % 3;
    received.pieces.push_back(absl::MakeConstSpan(slab.data() + shift, slab.size() - shift));
  }
  return received;
}

int RunSparse(int pushes, int reps) {
  Shard shard(0, MakeSparseJob(), nullptr);
  v1::PartitionMap map = MakeMap();
  map.mutable_workers()->DeleteSubrange(1, 1);
  if (absl::Status s = shard.InstallMap(map); !s.ok()) {
    std::fprintf(stderr, "cairn-apply-bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<Key> keys;
  std::mt19937_64 random(20261206);
  while (static_cast<int64_t>(keys.size()) < kSparseRows) {
    const Key k = random();
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  v1::PushRequest request;
  request.set_map_version(1);
  request.set_worker_id(0);
  request.set_incarnation(1);
  request.set_group(0);
  v1::TableValues* tv = request.add_tables();
  tv->set_table_id(0);
  tv->set_table("emb");
  tv->set_dtype(v1::DTYPE_FLOAT32);
  tv->add_shape(kSparseRows);
  tv->add_shape(kSparseWidth);
  tv->set_keys(KeysToBytes(keys));
  const std::string values =
      FloatsToBytes(std::vector<float>(kSparseRows * kSparseWidth, 0.001f));
  const ReceivedValues received = CutAsReceived(values);
  const std::vector<ValuePieces> as_received = {received.pieces};
  const std::vector<ValuePieces> one_buffer = {OnePiece(values)};
  uint64_t sequence = 0;
  auto push = [&](const std::vector<ValuePieces>& pieces) {
    request.set_sequence(++sequence);
    absl::StatusOr<bool> r = shard.Push(request, pieces);
    if (!r.ok() || *r) {
      std::fprintf(stderr, "cairn-apply-bench: push failed: %s\n",
                   std::string(r.status().message()).c_str());
      std::exit(1);
    }
  };
  // The reference's rows: as many as the table's, each at a slot of its
  // own, visited in the push's order.
  std::vector<float> table(kSparseRows * kSparseWidth, 0.0f);
  std::vector<uint32_t> slots(kSparseRows);
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), random);
  const float* grads = reinterpret_cast<const float*>(values.data());
  auto add_rows = [&] {
    for (int64_t i = 0; i < kSparseRows; ++i) {
      float* __restrict y = table.data() + slots[i] * kSparseWidth;
      const float* __restrict x = grads + i * kSparseWidth;
      for (int64_t j = 0; j < kSparseWidth; ++j) y[j] += x[j];
    }
    asm volatile("" ::: "memory");
  };
  std::vector<double> pieces_s, one_s, add_s;
  for (int r = 0; r < reps + 1; ++r) {  // the first round warms up
    const double t1 = SecondsOf([&] { for (int i = 0; i < pushes; ++i) push(as_received); });
    const double t2 = SecondsOf([&] { for (int i = 0; i < pushes; ++i) push(one_buffer); });
    const double t3 = SecondsOf([&] { for (int i = 0; i < pushes; ++i) add_rows(); });
    if (r == 0) continue;
    pieces_s.push_back(t1);
    one_s.push_back(t2);
    add_s.push_back(t3);
  }
  const double bytes = static_cast<double>(pushes) * values.size();
  const double m1 = Median(pieces_s), m2 = Median(one_s), m3 = Median(add_s);
  std::printf("sparse push of %lld rows x %lld (%zu value bytes), 1 worker, %d pushes per round, "
              "median of %d rounds\n\n",
              static_cast<long long>(kSparseRows), static_cast<long long>(kSparseWidth),
              values.size(), pushes, reps);
  std::printf("| run | pushes/s | GB/s applied | apply / rows y += x |\n|---|---:|---:|---:|\n");
  std::printf("| received pieces (%zu, misaligned) | %.0f | %.2f | %.2f |\n",
              received.pieces.size(), pushes / m1, bytes / m1 / 1e9, m3 / m1);
  std::printf("| one aligned buffer | %.0f | %.2f | %.2f |\n", pushes / m2, bytes / m2 / 1e9,
              m3 / m2);
  std::printf("| rows y += x, same bytes | %.0f | %.2f | 1.00 |\n", pushes / m3,
              bytes / m3 / 1e9);
  return 0;
}

int Run(int mib, int pushes, int reps) {
  const int64_t chunks = std::max<int64_t>(1, int64_t{mib} * (1 << 20) / 4 / kChunk);
  const int64_t floats = 2 * chunks * kChunk;
  Shard shard(0, MakeJob(floats), nullptr);
  if (absl::Status s = shard.InstallMap(MakeMap()); !s.ok()) {
    std::fprintf(stderr, "cairn-apply-bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<v1::PushRequest> requests = {MakePush(0, chunks, floats),
                                           MakePush(1, chunks, floats)};
  uint64_t sequence[2] = {0, 0};
  auto push = [&](uint32_t w) {
    requests[w].set_sequence(++sequence[w]);
    absl::StatusOr<bool> r = shard.Push(requests[w]);
    if (!r.ok() || *r) {
      std::fprintf(stderr, "cairn-apply-bench: push failed: %s\n",
                   std::string(r.status().message()).c_str());
      std::exit(1);
    }
  };
  auto seconds_of = [](auto&& body) { return SecondsOf(body); };
  std::vector<double> one, two, add, add_pairs, add_two;
  std::vector<float> x(chunks * kChunk, 0.001f), y(chunks * kChunk, 0.0f);
  std::vector<float> x1(chunks * kChunk, 0.001f), y1(chunks * kChunk, 0.0f);
  auto add_to = [](std::vector<float>& to, const std::vector<float>& from) {
    float* __restrict yp = to.data();
    const float* __restrict xp = from.data();
    for (size_t j = 0; j < to.size(); ++j) yp[j] += xp[j];
    asm volatile("" ::: "memory");
  };
  for (int r = 0; r < reps + 1; ++r) {  // the first round warms up
    const double t1 = seconds_of([&] {
      for (int i = 0; i < pushes; ++i) {
        push(0);
        push(1);
      }
    });
    const double t2 = seconds_of([&] {
      std::thread a([&] { for (int i = 0; i < pushes; ++i) push(0); });
      std::thread b([&] { for (int i = 0; i < pushes; ++i) push(1); });
      a.join();
      b.join();
    });
    const double t3 = seconds_of([&] {
      for (int i = 0; i < 2 * pushes; ++i) add_to(y, x);
    });
    const double t4 = seconds_of([&] {
      for (int i = 0; i < pushes; ++i) {
        add_to(y, x);
        add_to(y1, x1);
      }
    });
    const double t5 = seconds_of([&] {
      std::thread a([&] { for (int i = 0; i < pushes; ++i) add_to(y, x); });
      std::thread b([&] { for (int i = 0; i < pushes; ++i) add_to(y1, x1); });
      a.join();
      b.join();
    });
    if (r == 0) continue;
    one.push_back(t1);
    two.push_back(t2);
    add.push_back(t3);
    add_pairs.push_back(t4);
    add_two.push_back(t5);
  }
  const double bytes = 2.0 * pushes * chunks * kChunk * sizeof(float);
  const double n = 2.0 * pushes;
  const double m1 = Median(one), m2 = Median(two), m3 = Median(add), m4 = Median(add_pairs);
  const double m5 = Median(add_two);
  std::printf("%d MiB per push, 2 partitions, %d pushes per worker per round, median of %d "
              "rounds; %u hardware threads\n\n",
              mib, pushes, reps, std::thread::hardware_concurrency());
  std::printf("| run | pushes/s | GB/s applied | ratio |\n|---|---:|---:|---:|\n");
  std::printf("| 1 thread | %.0f | %.2f | 1.00 |\n", n / m1, bytes / m1 / 1e9);
  std::printf("| 2 threads | %.0f | %.2f | %.2f (2 threads / 1) |\n", n / m2, bytes / m2 / 1e9,
              m1 / m2);
  std::printf("| y += x, same bytes, 1 thread | %.0f | %.2f | %.2f (1 thread apply / y += x) |\n",
              n / m3, bytes / m3 / 1e9, m3 / m1);
  std::printf("| y += x, same bytes, two pairs in turn, 1 thread | %.0f | %.2f | %.2f (1 thread "
              "apply / y += x) |\n",
              n / m4, bytes / m4 / 1e9, m4 / m1);
  std::printf("| y += x, two pairs, one per thread on 2 threads | %.0f | %.2f | %.2f (2 threads / 1 "
              "for y += x: what the machine gives; the apply's over it: %.2f) |\n",
              n / m5, bytes / m5 / 1e9, m4 / m5, (m1 / m2) / (m4 / m5));
  return 0;
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  cairn::DisableMutexDeadlockDetection();  // as cairn-server does
  CLI::App app{"cairn-apply-bench: a server's push apply on 1 and 2 threads, next to y += x"};
  int mib = 4, pushes = 50, reps = 5;
  bool sparse = false;
  app.add_option("--mib", mib, "MiB of gradient per push")->check(CLI::Range(1, 1024));
  app.add_option("--pushes", pushes, "pushes per worker per round")->check(CLI::Range(1, 100000));
  app.add_option("--reps", reps, "timed rounds")->check(CLI::Range(1, 1000));
  app.add_flag("--sparse", sparse,
               "a sparse push of 4096 rows x 64 instead, from pieces as gRPC received them "
               "and from one buffer, next to y += x over its rows (--mib unused)");
  CLI11_PARSE(app, argc, argv);
  return sparse ? cairn::RunSparse(pushes, reps) : cairn::Run(mib, pushes, reps);
}
