// Tables, training and comparison helpers shared by the checkpoint tests.
#ifndef CAIRN_TESTS_SERVER_SHARD_CHECKPOINT_TEST_UTIL_H_
#define CAIRN_TESTS_SERVER_SHARD_CHECKPOINT_TEST_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <algorithm>

#include "cairn/v1/types.pb.h"
#include "common/bytes.h"
#include "server/shard/grad_buffer.h"
#include "server/shard/table.h"

namespace cairn::testing {

// Dense W[10x4] in chunks of 3 elements (14 chunks, the last of 1 element), Adagrad.
inline v1::TableSpec DenseAdagrad(std::vector<int64_t> shape = {10, 4}) {
  v1::TableSpec t;
  t.set_name("W");
  t.set_id(0);
  t.set_kind(v1::TABLE_KIND_DENSE);
  for (int64_t d : shape) t.add_shape(d);
  t.set_chunk_size(3);
  t.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_ADAGRAD);
  t.mutable_optimizer()->set_learning_rate(0.1f);
  t.mutable_optimizer()->set_epsilon(1e-8f);
  t.mutable_optimizer()->set_initial_accumulator(0.1f);
  t.mutable_init()->set_kind(v1::INIT_KIND_UNIFORM);
  t.mutable_init()->set_scale(0.5f);
  t.mutable_init()->set_seed(7);
  t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  return t;
}

// Sparse E of width 4, Adam.
inline v1::TableSpec SparseAdam() {
  v1::TableSpec t;
  t.set_name("E");
  t.set_id(1);
  t.set_kind(v1::TABLE_KIND_SPARSE);
  t.set_width(4);
  t.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_ADAM);
  t.mutable_optimizer()->set_learning_rate(0.01f);
  t.mutable_optimizer()->set_beta1(0.9f);
  t.mutable_optimizer()->set_beta2(0.999f);
  t.mutable_optimizer()->set_epsilon(1e-8f);
  t.mutable_init()->set_kind(v1::INIT_KIND_UNIFORM);
  t.mutable_init()->set_scale(0.1f);
  t.mutable_init()->set_seed(3);
  t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  return t;
}

// Sparse keys of field case B10: 0..99, 2^63 and 2^64-1.
inline std::vector<Key> B10Keys() {
  std::vector<Key> keys;
  for (Key k = 0; k < 100; ++k) keys.push_back(k);
  keys.push_back(Key{1} << 63);
  keys.push_back(~Key{0});
  return keys;
}

// Ownership vector: partition p held when p % servers == server.
inline std::vector<bool> Owned(uint32_t partitions, uint32_t servers, uint32_t server) {
  std::vector<bool> owned(partitions);
  for (uint32_t p = 0; p < partitions; ++p) owned[p] = p % servers == server;
  return owned;
}

// Applies `steps` updates to `keys` (each row's length from the table),
// gradient of element i of key k at step s = 0.01 * ((k + i + s) % 7) - 0.03.
inline void Train(Table& table, const std::vector<Key>& keys, int steps) {
  for (int s = 0; s < steps; ++s) {
    const std::string key_bytes = KeysToBytes(keys);
    const uint64_t floats = table.CheckKeys(key_bytes, keys.size()).value();
    std::vector<float> grads;
    const uint64_t per_key = floats / keys.size();  // equal rows except a dense tail
    for (size_t j = 0; j < floats; ++j) {
      const Key k = keys[std::min<size_t>(j / std::max<uint64_t>(per_key, 1), keys.size() - 1)];
      grads.push_back(0.01f * static_cast<float>((k % 97 + j + s) % 7) - 0.03f);
    }
    GradBuffer buffer;
    table.Gather(key_bytes, keys.size(), FloatsToBytes(grads), &buffer);
    table.Apply(buffer);
  }
}

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_SERVER_SHARD_CHECKPOINT_TEST_UTIL_H_
