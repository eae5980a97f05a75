#include "tests/fuzz/fuzz_shard.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/bytes.h"
#include "common/partitioning.h"
#include "common/wire_dtype.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/shard/table.h"
#include "tests/fuzz/fuzz_util.h"

namespace cairn::fuzz {
namespace {

v1::TableSpec Dense(const std::string& name, std::vector<int64_t> shape, int64_t chunk) {
  v1::TableSpec t;
  t.set_name(name);
  t.set_kind(v1::TABLE_KIND_DENSE);
  for (int64_t d : shape) t.add_shape(d);
  t.set_chunk_size(chunk);
  return t;
}

v1::TableSpec Sparse(const std::string& name, int64_t width) {
  v1::TableSpec t;
  t.set_name(name);
  t.set_kind(v1::TABLE_KIND_SPARSE);
  t.set_width(width);
  return t;
}

v1::Member Worker(uint32_t id) {
  v1::Member m;
  m.set_id(id);
  m.set_role(v1::MEMBER_ROLE_WORKER);
  m.set_state(v1::MEMBER_STATE_ALIVE);
  m.set_incarnation(1);
  return m;
}

v1::Member Server(uint32_t id) {
  v1::Member m;
  m.set_id(id);
  m.set_role(v1::MEMBER_ROLE_SERVER);
  m.set_state(v1::MEMBER_STATE_ALIVE);
  m.set_address(absl::StrCat("127.0.0.1:", 7001 + id));
  return m;
}

}  // namespace

v1::JobSpec FuzzJob(uint32_t replication) {
  v1::JobSpec job;
  v1::TableSpec w = Dense("w", {3, 5}, 4);
  w.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_ADAM);
  w.mutable_optimizer()->set_learning_rate(0.01f);
  w.mutable_optimizer()->set_beta1(0.9f);
  w.mutable_optimizer()->set_beta2(0.999f);
  w.mutable_optimizer()->set_epsilon(1e-8f);
  w.mutable_init()->set_kind(v1::INIT_KIND_UNIFORM);
  w.mutable_init()->set_scale(0.1f);
  w.mutable_init()->set_seed(1);
  w.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  w.set_consistency(v1::CONSISTENCY_BSP);
  w.set_aggregation(v1::AGGREGATION_MEAN);
  w.set_wire_dtype(v1::DTYPE_FLOAT32);

  v1::TableSpec emb = Sparse("emb", 4);
  emb.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_ADAGRAD);
  emb.mutable_optimizer()->set_learning_rate(0.1f);
  emb.mutable_optimizer()->set_initial_accumulator(0.1f);
  emb.mutable_optimizer()->set_epsilon(1e-10f);
  emb.mutable_init()->set_kind(v1::INIT_KIND_NORMAL);
  emb.mutable_init()->set_scale(0.01f);
  emb.mutable_init()->set_seed(2);
  emb.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  emb.set_consistency(v1::CONSISTENCY_SSP);
  emb.set_staleness(1);
  emb.set_aggregation(v1::AGGREGATION_MEAN);
  emb.set_wire_dtype(v1::DTYPE_FLOAT32);
  emb.set_min_count(2);
  emb.set_capacity_rows(6);
  emb.set_evict_to(0.5);

  v1::TableSpec b = Dense("b", {5}, 2);
  b.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  b.mutable_optimizer()->set_learning_rate(0.5f);
  b.mutable_optimizer()->set_momentum(0.9f);
  b.mutable_optimizer()->set_nesterov(true);
  b.mutable_init()->set_kind(v1::INIT_KIND_CONSTANT);
  b.mutable_init()->set_value(0.5f);
  b.set_non_finite(v1::NON_FINITE_POLICY_ALLOW);
  b.set_consistency(v1::CONSISTENCY_ASP);
  b.set_aggregation(v1::AGGREGATION_SUM);
  b.set_wire_dtype(v1::DTYPE_BFLOAT16);

  v1::TableSpec emb16 = Sparse("emb16", 3);
  emb16.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  emb16.mutable_optimizer()->set_learning_rate(1.0f);
  emb16.mutable_optimizer()->set_weight_decay(0.01f);
  emb16.mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  emb16.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  emb16.set_consistency(v1::CONSISTENCY_BSP);
  emb16.set_aggregation(v1::AGGREGATION_SUM);
  emb16.set_wire_dtype(v1::DTYPE_FLOAT16);

  uint32_t id = 0;
  for (v1::TableSpec* t : {&w, &emb, &b, &emb16}) {
    t->set_id(id++);
    *job.add_tables() = *t;
  }
  job.set_num_partitions(kPartitions);
  job.set_num_workers(2);
  job.set_num_servers(replication);
  job.set_replication(replication);
  job.set_max_message_bytes(4 << 20);
  job.set_pull_deadline_ms(1000);
  job.set_lease_timeout_ms(5000);
  job.set_heartbeat_interval_ms(500);
  return job;
}

v1::PartitionMap SoloMap() {
  v1::PartitionMap map;
  map.set_version(1);
  map.set_num_partitions(kPartitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(0);
    a->set_group(0);
  }
  *map.add_servers() = Server(0);
  *map.add_workers() = Worker(0);
  *map.add_workers() = Worker(1);
  return map;
}

v1::PartitionMap JoinMap(uint64_t version) {
  v1::PartitionMap map;
  map.set_version(version);
  map.set_num_partitions(kPartitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(0);
    a->set_group(p % 2);
    a->add_joining(2);
  }
  *map.add_servers() = Server(0);
  *map.add_servers() = Server(2);
  *map.add_workers() = Worker(0);
  *map.add_workers() = Worker(1);
  return map;
}

v1::PushRequest MakePush(const v1::JobSpec& job, uint64_t version, uint32_t group,
                         uint32_t worker, uint64_t sequence, int64_t clock,
                         const std::vector<std::vector<Key>>& keys_per_table) {
  v1::PushRequest r;
  r.set_map_version(version);
  r.set_worker_id(worker);
  r.set_incarnation(1);
  r.set_sequence(sequence);
  r.set_clock(clock);
  r.set_group(group);
  for (size_t i = 0; i < keys_per_table.size() && i < static_cast<size_t>(job.tables_size());
       ++i) {
    const std::vector<Key>& keys = keys_per_table[i];
    if (keys.empty()) continue;
    const v1::TableSpec& spec = job.tables(static_cast<int>(i));
    v1::TableValues* tv = r.add_tables();
    tv->set_table_id(spec.id());
    tv->set_table(spec.name());
    tv->set_keys(KeysToBytes(keys));
    uint64_t floats = 0;
    if (spec.kind() == v1::TABLE_KIND_DENSE) {
      uint64_t elements = 1;
      for (int64_t d : spec.shape()) {
        elements *= static_cast<uint64_t>(d);
        tv->add_shape(d);
      }
      const uint64_t chunk = static_cast<uint64_t>(spec.chunk_size());
      for (Key k : keys) floats += std::min(chunk, elements - k * chunk);
    } else {
      tv->add_shape(static_cast<int64_t>(keys.size()));
      tv->add_shape(spec.width());
      floats = keys.size() * static_cast<uint64_t>(spec.width());
    }
    const std::vector<float> grads(floats, 0.25f);
    const v1::DType dtype =
        spec.wire_dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_FLOAT32 : spec.wire_dtype();
    tv->set_dtype(dtype);
    if (dtype == v1::DTYPE_FLOAT32) {
      tv->set_values(FloatsToBytes(grads));
    } else {
      // 0.25 is exact in both 16-bit formats: fp16 0x3400, bf16 0x3e80.
      const uint16_t bits = dtype == v1::DTYPE_FLOAT16 ? 0x3400 : 0x3e80;
      std::string values;
      for (uint64_t i = 0; i < floats; ++i) {
        values.append(reinterpret_cast<const char*>(&bits), sizeof(bits));
      }
      tv->set_values(values);
    }
  }
  return r;
}

v1::ClockRequest MakeClock(uint64_t version, uint32_t worker, int64_t clock, bool leaving) {
  v1::ClockRequest r;
  r.set_map_version(version);
  r.set_worker_id(worker);
  r.set_incarnation(1);
  r.set_clock(clock);
  r.set_leaving(leaving);
  return r;
}

v1::PullRequest MakePull(uint64_t version, int64_t clock,
                         const std::vector<std::vector<Key>>& keys_per_table) {
  const v1::JobSpec job = FuzzJob();
  v1::PullRequest r;
  r.set_map_version(version);
  r.set_worker_id(0);
  r.set_incarnation(1);
  r.set_clock(clock);
  for (size_t i = 0; i < keys_per_table.size() && i < static_cast<size_t>(job.tables_size());
       ++i) {
    if (keys_per_table[i].empty()) continue;
    v1::TableKeys* tk = r.add_tables();
    tk->set_table_id(static_cast<uint32_t>(i));
    tk->set_table(job.tables(static_cast<int>(i)).name());
    tk->set_keys(KeysToBytes(keys_per_table[i]));
    tk->set_dtype(job.tables(static_cast<int>(i)).wire_dtype());
  }
  return r;
}

std::vector<std::vector<Key>> GroupKeys(const v1::JobSpec& job, uint32_t group) {
  std::vector<bool> owned(kPartitions, true);
  std::vector<std::vector<Key>> out;
  for (const v1::TableSpec& spec : job.tables()) {
    auto table = Table::Create(spec, kPartitions, owned);
    std::vector<Key> keys;
    if (table.ok()) {
      if (spec.kind() == v1::TABLE_KIND_DENSE) {
        uint64_t elements = 1;
        for (int64_t d : spec.shape()) elements *= static_cast<uint64_t>(d);
        const uint64_t chunks = (elements + spec.chunk_size() - 1) / spec.chunk_size();
        for (Key k = 0; k < chunks; ++k) {
          if ((*table)->PartitionOf(k) % 2 == group) keys.push_back(k);
        }
      } else {
        for (Key k = 1; keys.size() < 3 && k < 1000; ++k) {
          const Key id = k * 7919;
          if ((*table)->PartitionOf(id) % 2 == group) keys.push_back(id);
        }
      }
    }
    out.push_back(keys);
  }
  return out;
}

std::vector<std::vector<Key>> AllKeys(const v1::JobSpec& job) {
  std::vector<std::vector<Key>> keys = GroupKeys(job, 0);
  const std::vector<std::vector<Key>> odd = GroupKeys(job, 1);
  for (size_t t = 0; t < keys.size(); ++t) {
    keys[t].insert(keys[t].end(), odd[t].begin(), odd[t].end());
    std::sort(keys[t].begin(), keys[t].end());
  }
  return keys;
}

FuzzRegion& TheRegion() {
  static FuzzRegion* const region = [] {
    auto* r = new FuzzRegion;
    absl::StatusOr<std::unique_ptr<SharedRegion>> created = SharedRegion::Create(16 << 10);
    if (!created.ok()) Fail(std::string(created.status().message()));
    r->created = *std::move(created);
    float* values = reinterpret_cast<float*>(r->created->data() + SharedRegion::kHeaderBytes);
    const size_t n = (r->created->size() - SharedRegion::kHeaderBytes) / sizeof(float);
    for (size_t i = 0; i < n; ++i) values[i] = 0.25f;
    v1::OpenRegionRequest offer;
    offer.set_worker_id(0);
    offer.set_incarnation(1);
    offer.set_pid(getpid());
    offer.set_fd(r->created->fd());
    offer.set_bytes(r->created->size());
    offer.set_token(r->created->token());
    absl::StatusOr<uint64_t> id = r->regions.Open(offer);
    if (!id.ok()) Fail(std::string(id.status().message()));
    r->id = *id;
    return r;
  }();
  return *region;
}

std::string StateBytes(const Shard& shard, bool clocks) {
  absl::StatusOr<ShardSnapshot> snap = shard.Snapshot();
  if (!snap.ok()) return "";
  std::string out;
  if (clocks) {
    absl::StrAppend(&out, "closed_before ", snap->closed_before, " min_clock ", snap->min_clock,
                    "\n");
    for (const auto& [worker, clock] : snap->worker_clocks) {
      absl::StrAppend(&out, "worker ", worker, " clock ", clock, "\n");
    }
  }
  for (const auto& [worker, floor] : snap->sequence_floors) {
    absl::StrAppend(&out, "worker ", worker, " floor ", floor, "\n");
  }
  for (const ShardSnapshot::Partition& p : snap->partitions) {
    absl::StrAppend(&out, "table ", p.table_id, " partition ", p.partition, " ",
                    checkpoint::EncodeRows(p.rows), "\n");
  }
  return out;
}

}  // namespace cairn::fuzz

namespace cairn::fuzz {

std::string FirstDifference(const std::string& before, const std::string& after) {
  const std::vector<std::string> a = absl::StrSplit(before, '\n');
  const std::vector<std::string> b = absl::StrSplit(after, '\n');
  for (size_t i = 0; i < a.size() || i < b.size(); ++i) {
    const std::string x = i < a.size() ? a[i] : "(none)";
    const std::string y = i < b.size() ? b[i] : "(none)";
    if (x != y) {
      return absl::StrCat("line ", i, " before \"", absl::CHexEscape(x.substr(0, 200)),
                          "\" after \"", absl::CHexEscape(y.substr(0, 200)), "\"");
    }
  }
  return "no difference";
}

}  // namespace cairn::fuzz
