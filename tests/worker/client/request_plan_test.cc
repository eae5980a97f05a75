// How a pull or push is cut into requests (worker/client/request_plan.h):
// every key reaches the group that holds it exactly once, requests keep to
// the split size, and the messages carry the caller's keys and values.
#include "worker/client/request_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "common/partitioning.h"
#include "common/wire_dtype.h"

namespace cairn {
namespace {

constexpr uint32_t kPartitions = 8;

// Partition p in group p / 2; group g's primary is server g % 2.
Router FourGroups() {
  v1::PartitionMap map;
  map.set_version(3);
  map.set_num_partitions(kPartitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_group(p / 2);
    a->set_primary((p / 2) % 2);
  }
  absl::StatusOr<Router> router = Router::Create(map);
  REQUIRE(router.ok());
  return *std::move(router);
}

v1::TableSpec Dense(uint32_t id, int64_t elements, int64_t chunk_size,
                    v1::DType wire = v1::DTYPE_FLOAT32) {
  v1::TableSpec spec;
  spec.set_id(id);
  spec.set_name("dense" + std::to_string(id));
  spec.set_kind(v1::TABLE_KIND_DENSE);
  spec.add_shape(elements);
  spec.set_chunk_size(chunk_size);
  spec.set_wire_dtype(wire);
  return spec;
}

v1::TableSpec Sparse(uint32_t id, int64_t width) {
  v1::TableSpec spec;
  spec.set_id(id);
  spec.set_name("sparse" + std::to_string(id));
  spec.set_kind(v1::TABLE_KIND_SPARSE);
  spec.set_width(width);
  return spec;
}

TableInput DenseInput(const v1::TableSpec& spec, float* out, const float* in) {
  const uint64_t chunks = NumChunks(DenseElements(spec), spec.chunk_size());
  return TableInput{&spec, nullptr, chunks, chunks, out, in};
}

std::vector<Key> DecodeKeys(const std::string& bytes) {
  std::vector<Key> keys(bytes.size() / sizeof(Key));
  std::memcpy(keys.data(), bytes.data(), keys.size() * sizeof(Key));
  return keys;
}

TEST_CASE("RouteDense gives each chunk to the group of the partition whose range holds it") {
  const Router router = FourGroups();
  // Fewer chunks than partitions (routed chunk by chunk), as many, and
  // more (routed partition by partition), under every rotation.
  for (uint64_t chunks : {1, 3, 7, 8, 9, 16, 61}) {
    for (uint32_t offset = 0; offset < kPartitions; ++offset) {
      std::map<uint32_t, std::vector<Key>> expected;
      for (uint32_t p = 0; p < kPartitions; ++p) {
        const KeyRange range = DensePartitionRange(chunks, kPartitions, p, offset);
        for (Key c = range.begin; c < range.end; ++c) expected[p / 2].push_back(c);
      }
      for (auto& [group, keys] : expected) std::sort(keys.begin(), keys.end());
      INFO("chunks " << chunks << " offset " << offset);
      CHECK(router.RouteDense(chunks, offset) == expected);
    }
  }
}

TEST_CASE("RouteSparse sends each key to its partition's group, whatever the groups' ids") {
  // Groups 12, 3 and 7, given out of order over 8 partitions.
  v1::PartitionMap map;
  map.set_version(1);
  map.set_num_partitions(kPartitions);
  const uint32_t groups[kPartitions] = {12, 3, 7, 12, 7, 3, 3, 12};
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_group(groups[p]);
    a->set_primary(groups[p] % 5);
  }
  absl::StatusOr<Router> router = Router::Create(map);
  REQUIRE(router.ok());
  std::vector<Key> keys;
  for (Key k = 0; k < 500; ++k) keys.push_back(k * 104729 + 5);
  std::map<uint32_t, std::vector<uint32_t>> expected;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    expected[groups[SparsePartition(keys[i], kPartitions)]].push_back(i);
  }
  CHECK(router->RouteSparse(keys.data(), keys.size()) == expected);
  CHECK(router->RouteSparse(keys.data(), 0).empty());
}

TEST_CASE("RouteSparse sends every key to the one group of a map with one group") {
  v1::PartitionMap map;
  map.set_version(1);
  map.set_num_partitions(kPartitions);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_group(5);
    a->set_primary(2);
  }
  absl::StatusOr<Router> router = Router::Create(map);
  REQUIRE(router.ok());
  std::vector<Key> keys;
  for (Key k = 0; k < 300; ++k) keys.push_back(k * 104729 + 5);
  std::map<uint32_t, std::vector<uint32_t>> expected;
  for (uint32_t i = 0; i < keys.size(); ++i) expected[5].push_back(i);
  CHECK(router->RouteSparse(keys.data(), keys.size()) == expected);
  CHECK(router->RouteSparse(keys.data(), 0).empty());
}

TEST_CASE("PlanRequests sends every chunk and row once, to the group that holds it, within the split") {
  const Router router = FourGroups();
  // 1000 floats in chunks of 64: 16 chunks, the last one of 40 floats.
  const v1::TableSpec dense = Dense(0, 1000, 64);
  const v1::TableSpec sparse = Sparse(1, 8);
  std::vector<float> weights(1000);
  std::vector<Key> keys;
  for (Key k = 0; k < 300; ++k) keys.push_back(k * 7919 + 13);
  std::vector<float> rows(keys.size() * 8);
  const std::vector<TableInput> inputs = {
      DenseInput(dense, weights.data(), nullptr),
      TableInput{&sparse, keys.data(), keys.size(), 0, rows.data(), nullptr}};
  // 3 chunks of 64 floats, or 24 rows of 8.
  const uint64_t split = 3 * 64 * sizeof(float);

  const std::vector<PlannedRequest> plan = PlanRequests(inputs, router, nullptr, split);

  std::map<uint32_t, uint32_t> dense_group;   // chunk -> group it was sent to
  std::map<uint32_t, uint32_t> sparse_group;  // index -> group
  const auto routed_dense = router.RouteDense(16, dense.partition_offset());
  const auto routed_sparse = router.RouteSparse(keys.data(), keys.size());
  uint32_t last_group = 0;
  for (const PlannedRequest& request : plan) {
    CHECK(request.group >= last_group);  // a group's requests follow each other
    last_group = request.group;
    uint64_t bytes = 0;
    size_t last_input = 0;
    for (const auto& [input, idx] : request.entries) {
      CHECK(input >= last_input);
      last_input = input;
      REQUIRE_FALSE(idx.empty());
      for (uint32_t j : idx) {
        bytes += FloatsOf(inputs[input], j) * sizeof(float);
        auto& seen = input == 0 ? dense_group : sparse_group;
        CHECK(seen.emplace(j, request.group).second);  // once
      }
      if (input == 0) CHECK(std::is_sorted(idx.begin(), idx.end()));
    }
    CHECK(bytes <= split);
  }
  REQUIRE(dense_group.size() == 16);
  REQUIRE(sparse_group.size() == keys.size());
  for (const auto& [group, chunks] : routed_dense) {
    for (Key c : chunks) CHECK(dense_group.at(static_cast<uint32_t>(c)) == group);
  }
  for (const auto& [group, idx] : routed_sparse) {
    for (uint32_t j : idx) CHECK(sparse_group.at(j) == group);
  }
  // 4,000 + 9,600 value bytes at no more than 768 a request, and one group's
  // 4 chunks (1,024 bytes) never fit in one.
  CHECK(plan.size() >= (4000 + 9600 + split - 1) / split);
  CHECK(plan.size() >= 8);
}

TEST_CASE("PlanRequests cuts each group's share at that group's split") {
  const Router router = FourGroups();
  // 4096 floats in chunks of 64: 64 chunks, 16 per group (2 partitions each).
  const v1::TableSpec dense = Dense(0, 4096, 64);
  std::vector<float> weights(4096);
  const std::vector<TableInput> inputs = {DenseInput(dense, weights.data(), nullptr)};
  // Group 1 (a server whose region the worker holds, say) at 8 chunks a
  // request, the others at 2.
  const uint64_t chunk_bytes = 64 * sizeof(float);
  auto split_of = [&](uint32_t group) { return (group == 1 ? 8 : 2) * chunk_bytes; };

  const std::vector<PlannedRequest> plan = PlanRequests(inputs, router, nullptr, split_of);

  std::map<uint32_t, int> requests;  // group -> requests
  std::set<uint32_t> sent;
  for (const PlannedRequest& request : plan) {
    ++requests[request.group];
    uint64_t bytes = 0;
    for (const auto& [input, idx] : request.entries) {
      for (uint32_t j : idx) {
        bytes += FloatsOf(inputs[input], j) * sizeof(float);
        CHECK(sent.insert(j).second);
      }
    }
    CHECK(bytes == split_of(request.group));  // 16 chunks a group divide evenly
  }
  CHECK(sent.size() == 64);
  CHECK(requests == std::map<uint32_t, int>{{0, 8}, {1, 2}, {2, 8}, {3, 8}});
}

TEST_CASE("PlanRequests with a subset sends only those indices, dense ones sorted first") {
  const Router router = FourGroups();
  const v1::TableSpec dense = Dense(0, 16 * 4, 4);
  const v1::TableSpec sparse = Sparse(1, 2);
  std::vector<float> weights(64);
  const std::vector<Key> keys = {5, 900, 17, 33, 1 << 20, 77};
  std::vector<float> rows(keys.size() * 2);
  const std::vector<TableInput> inputs = {
      DenseInput(dense, weights.data(), nullptr),
      TableInput{&sparse, keys.data(), keys.size(), 0, rows.data(), nullptr}};
  const InputIndices only = {{0, {14, 3, 9, 0}}, {1, {4, 1, 2}}};

  const std::vector<PlannedRequest> plan = PlanRequests(inputs, router, &only, 1 << 20);

  std::multiset<uint32_t> dense_sent, sparse_sent;
  for (const PlannedRequest& request : plan) {
    for (const auto& [input, idx] : request.entries) {
      for (uint32_t j : idx) {
        (input == 0 ? dense_sent : sparse_sent).insert(j);
        if (input == 1) {
          const auto routed = router.RouteSparse(&keys[j], 1);
          CHECK(routed.begin()->first == request.group);
        }
      }
      if (input == 0) CHECK(std::is_sorted(idx.begin(), idx.end()));
    }
  }
  CHECK(dense_sent == std::multiset<uint32_t>{0, 3, 9, 14});
  CHECK(sparse_sent == std::multiset<uint32_t>{1, 2, 4});
}

TEST_CASE("BuildPushRequest carries the worker, sequence, keys and the caller's values") {
  const Router router = FourGroups();
  const v1::TableSpec dense = Dense(2, 300, 32);
  std::vector<float> grads(300);
  std::iota(grads.begin(), grads.end(), 0.25f);
  const std::vector<TableInput> inputs = {DenseInput(dense, nullptr, grads.data())};
  const std::vector<PlannedRequest> plan = PlanRequests(inputs, router, nullptr, 1 << 20);
  REQUIRE(!plan.empty());

  for (const PlannedRequest& request : plan) {
    const std::shared_ptr<PushPayload> payload =
        BuildPushRequest(inputs, request, {7, 2, 41}, 1000 + request.group);
    const v1::PushRequest r = payload->ToProto();
    CHECK(r.worker_id() == 7);
    CHECK(r.incarnation() == 2);
    CHECK(r.clock() == 41);
    CHECK(r.group() == request.group);
    CHECK(r.sequence() == 1000 + request.group);
    REQUIRE(r.tables_size() == 1);
    const v1::TableValues& tv = r.tables(0);
    CHECK(tv.table_id() == 2);
    CHECK(tv.table() == "dense2");
    CHECK(tv.dtype() == v1::DTYPE_FLOAT32);
    CHECK(tv.shape_size() == 1);
    CHECK(tv.shape(0) == 300);
    const std::vector<Key> sent = DecodeKeys(tv.keys());
    const std::vector<uint32_t>& idx = request.entries[0].second;
    REQUIRE(sent.size() == idx.size());
    std::vector<float> expected;
    for (size_t i = 0; i < idx.size(); ++i) {
      CHECK(sent[i] == idx[i]);
      const uint32_t len = FloatsOf(inputs[0], idx[i]);
      expected.insert(expected.end(), grads.begin() + OffsetOf(inputs[0], idx[i]),
                      grads.begin() + OffsetOf(inputs[0], idx[i]) + len);
    }
    REQUIRE(tv.values().size() == expected.size() * sizeof(float));
    CHECK(std::memcmp(tv.values().data(), expected.data(), tv.values().size()) == 0);
  }
}

TEST_CASE("A 16-bit table's push is narrowed into the payload and its pull answer widened back") {
  const Router router = FourGroups();
  const v1::TableSpec dense = Dense(0, 10, 4, v1::DTYPE_BFLOAT16);
  const std::vector<float> grads = {1.0f, -2.5f, 3.0f, 0.5f, 1e-3f, 7.0f, 8.0f, -9.0f, 10.0f, 0.0f};
  const std::vector<TableInput> push_inputs = {DenseInput(dense, nullptr, grads.data())};
  const std::vector<PlannedRequest> plan = PlanRequests(push_inputs, router, nullptr, 1 << 20);
  std::vector<float> pulled(10, -1.0f);
  const TableInput pull_input = DenseInput(dense, pulled.data(), nullptr);
  for (const PlannedRequest& request : plan) {
    const v1::PushRequest r = BuildPushRequest(push_inputs, request, {0, 1, 0}, 1)->ToProto();
    REQUIRE(r.tables_size() == 1);
    CHECK(r.tables(0).dtype() == v1::DTYPE_BFLOAT16);
    uint64_t floats = 0;
    for (uint32_t j : request.entries[0].second) floats += FloatsOf(push_inputs[0], j);
    REQUIRE(r.tables(0).values().size() == floats * 2);
    // The same bytes as a pull's answer come back as the rounded floats.
    CHECK(ScatterPulled(pull_input, request.entries[0].second, v1::DTYPE_BFLOAT16,
                        absl::MakeConstSpan(r.tables(0).values())));
  }
  for (size_t i = 0; i < grads.size(); ++i) CHECK(pulled[i] == Bf16ToFloat(FloatToBf16(grads[i])));
}

TEST_CASE("BuildPullRequest asks for the keys and counts the answer's bytes") {
  const v1::TableSpec sparse = Sparse(4, 16);
  const v1::TableSpec half = Dense(5, 100, 64, v1::DTYPE_FLOAT16);
  std::vector<Key> keys = {11, 12, 13};
  std::vector<float> rows(3 * 16), weights(100);
  const std::vector<TableInput> inputs = {
      TableInput{&sparse, keys.data(), keys.size(), 0, rows.data(), nullptr},
      DenseInput(half, weights.data(), nullptr)};
  v1::PullRequest r;
  const uint64_t reply = BuildPullRequest(inputs, {{0, {2, 0}}, {1, {0, 1}}}, {3, 4, 17}, 9, &r);
  CHECK(r.map_version() == 9);
  CHECK(r.worker_id() == 3);
  CHECK(r.incarnation() == 4);
  CHECK(r.clock() == 17);
  REQUIRE(r.tables_size() == 2);
  CHECK(r.tables(0).table() == "sparse4");
  CHECK(r.tables(0).dtype() == v1::DTYPE_FLOAT32);
  CHECK(DecodeKeys(r.tables(0).keys()) == std::vector<Key>{13, 11});
  CHECK(r.tables(1).table_id() == 5);
  CHECK(r.tables(1).dtype() == v1::DTYPE_FLOAT16);
  CHECK(DecodeKeys(r.tables(1).keys()) == std::vector<Key>{0, 1});
  // Two rows of 16 float32, then chunks of 64 and 36 halves.
  CHECK(reply == 2 * 16 * 4 + (64 + 36) * 2);
}

TEST_CASE("ScatterPulled puts rows where the caller asked and refuses an answer of the wrong size") {
  const v1::TableSpec sparse = Sparse(1, 2);
  const std::vector<Key> keys = {40, 41, 42};
  std::vector<float> out(6, 0.0f);
  const TableInput in{&sparse, keys.data(), keys.size(), 0, out.data(), nullptr};
  const std::vector<float> answer = {1, 2, 3, 4};  // rows of indices 2 then 0
  const auto bytes = absl::MakeConstSpan(reinterpret_cast<const char*>(answer.data()),
                                         answer.size() * sizeof(float));
  CHECK(ScatterPulled(in, {2, 0}, v1::DTYPE_UNSPECIFIED, bytes));
  CHECK(out == std::vector<float>{3, 4, 0, 0, 1, 2});

  CHECK_FALSE(ScatterPulled(in, {2, 0, 1}, v1::DTYPE_FLOAT32, bytes));        // too short
  CHECK_FALSE(ScatterPulled(in, {2}, v1::DTYPE_FLOAT32, bytes));              // too long
  CHECK_FALSE(ScatterPulled(in, {2, 0}, v1::DTYPE_FLOAT64, bytes));           // not a wire dtype
}

TEST_CASE("ScatterPulled reads an answer cut into pieces anywhere, inside a value too") {
  const v1::TableSpec sparse = Sparse(1, 3);
  const std::vector<Key> keys = {40, 41};
  const std::vector<float> answer = {1, 2, 3, 4, 5, 6};  // rows of indices 1 then 0
  for (v1::DType dtype : {v1::DTYPE_FLOAT32, v1::DTYPE_BFLOAT16}) {
    std::string bytes(answer.size() * WireBytes(dtype), '\0');
    EncodeValues(answer.data(), answer.size(), dtype, bytes.data());
    const std::vector<float> expected = {4, 5, 6, 1, 2, 3};
    // Every split into three pieces, empty ones included.
    for (size_t a = 0; a <= bytes.size(); ++a) {
      for (size_t b = a; b <= bytes.size(); ++b) {
        CAPTURE(dtype, a, b);
        std::vector<float> out(6, 0.0f);
        const TableInput in{&sparse, keys.data(), keys.size(), 0, out.data(), nullptr};
        const std::vector<absl::Span<const char>> pieces = {
            absl::MakeConstSpan(bytes.data(), a), absl::MakeConstSpan(bytes.data() + a, b - a),
            absl::MakeConstSpan(bytes.data() + b, bytes.size() - b)};
        CHECK(ScatterPulled(in, {1, 0}, dtype, pieces));
        CHECK(out == expected);
        // A byte too many or too few, wherever the cut.
        const std::string longer = bytes.substr(b) + "x";
        CHECK_FALSE(ScatterPulled(in, {1, 0}, dtype,
                                  {absl::MakeConstSpan(bytes.data(), b),
                                   absl::MakeConstSpan(longer.data(), longer.size())}));
        if (a < bytes.size()) {
          CHECK_FALSE(ScatterPulled(in, {1, 0}, dtype,
                                    {absl::MakeConstSpan(bytes.data(), a),
                                     absl::MakeConstSpan(bytes.data() + a, bytes.size() - a - 1)}));
        }
      }
    }
  }
}

}  // namespace
}  // namespace cairn
