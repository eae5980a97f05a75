// A sparse table of width 2 (SGD, learning rate 1, init 0.5) with rows
// pushed and read by key, for the tests of a sparse table's lifecycle
// (admission_test, eviction_test).
#ifndef CAIRN_TESTS_SERVER_SHARD_SPARSE_ROWS_UTIL_H_
#define CAIRN_TESTS_SERVER_SHARD_SPARSE_ROWS_UTIL_H_

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"

namespace cairn::testing {

inline constexpr uint32_t kSparsePartitions = 4;

inline v1::TableSpec SparseSpec() {
  v1::TableSpec spec;
  spec.set_name("emb");
  spec.set_kind(v1::TABLE_KIND_SPARSE);
  spec.set_width(2);
  spec.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  spec.mutable_optimizer()->set_learning_rate(1.0f);
  spec.mutable_init()->set_kind(v1::INIT_KIND_CONSTANT);
  spec.mutable_init()->set_value(0.5f);
  return spec;
}

inline std::unique_ptr<Table> MakeSparseTable(const v1::TableSpec& spec) {
  auto table = Table::Create(spec, kSparsePartitions, std::vector<bool>(kSparsePartitions, true));
  REQUIRE(table.ok());
  return std::move(*table);
}

// One push of gradient `g` to every value of `keys` (distinct).
inline void PushRows(Table& t, const std::vector<Key>& keys, float g = 1.0f) {
  const std::vector<float> grads(keys.size() * 2, g);
  t.ApplyUnique(KeysToBytes(keys), keys.size(),
                absl::string_view(reinterpret_cast<const char*>(grads.data()),
                                  grads.size() * sizeof(float)));
}

inline std::vector<float> PullRows(const Table& t, const std::vector<Key>& keys) {
  std::vector<float> out(keys.size() * 2);
  t.ReadTo(KeysToBytes(keys), keys.size(), out.data());
  return out;
}

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_SERVER_SHARD_SPARSE_ROWS_UTIL_H_
