// Builders for in-process Shard tests: scalar tables, ready partition maps,
// pushes, clock ticks and pulls that record their answer.
#ifndef CAIRN_TESTS_SERVER_SHARD_SHARD_TEST_UTIL_H_
#define CAIRN_TESTS_SERVER_SHARD_SHARD_TEST_UTIL_H_

#include <cstring>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "server/shard/shard.h"

namespace cairn {

// A dense table of one float (one chunk): SGD lr 1 from 0, NaN rejected.
inline v1::TableSpec ScalarTable(const std::string& name, v1::Consistency consistency,
                                 v1::Aggregation aggregation = v1::AGGREGATION_MEAN,
                                 int64_t staleness = 0) {
  v1::TableSpec t;
  t.set_name(name);
  t.set_kind(v1::TABLE_KIND_DENSE);
  t.add_shape(1);
  t.set_chunk_size(1);
  t.mutable_optimizer()->set_kind(v1::OPTIMIZER_KIND_SGD);
  t.mutable_optimizer()->set_learning_rate(1.0f);
  t.mutable_init()->set_kind(v1::INIT_KIND_ZEROS);
  t.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  t.set_consistency(consistency);
  t.set_aggregation(aggregation);
  t.set_staleness(staleness);
  return t;
}

// A job of `tables` (ids set in order) over `partitions` partitions.
inline v1::JobSpec Job(std::vector<v1::TableSpec> tables, uint32_t partitions = 4) {
  v1::JobSpec job;
  for (size_t i = 0; i < tables.size(); ++i) {
    tables[i].set_id(static_cast<uint32_t>(i));
    *job.add_tables() = tables[i];
  }
  job.set_num_partitions(partitions);
  return job;
}

// A ready map giving every partition to `server`, with live `workers`
// (start clocks from `start_clocks` where given, else 0).
inline v1::PartitionMap Map(uint32_t partitions, std::vector<uint32_t> workers,
                            uint64_t version = 1, uint32_t server = 0,
                            std::vector<int64_t> start_clocks = {}) {
  v1::PartitionMap map;
  map.set_version(version);
  map.set_num_partitions(partitions);
  map.set_ready(true);
  for (uint32_t p = 0; p < partitions; ++p) {
    v1::PartitionAssignment* a = map.add_assignments();
    a->set_partition(p);
    a->set_primary(server);
    a->set_group(server);
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    v1::Member* m = map.add_workers();
    m->set_id(workers[i]);
    m->set_role(v1::MEMBER_ROLE_WORKER);
    m->set_state(v1::MEMBER_STATE_ALIVE);
    m->set_incarnation(1);
    if (i < start_clocks.size()) m->set_start_clock(start_clocks[i]);
  }
  return map;
}

// A push of `grad` to key 0 of a scalar table, map version 1, by the
// worker's first incarnation.
inline v1::PushRequest PushScalar(uint32_t worker, uint64_t seq, int64_t clock, float grad,
                           uint32_t table_id = 0, const std::string& table = "w") {
  v1::PushRequest r;
  r.set_map_version(1);
  r.set_worker_id(worker);
  r.set_incarnation(1);
  r.set_sequence(seq);
  r.set_clock(clock);
  v1::TableValues* tv = r.add_tables();
  tv->set_table_id(table_id);
  tv->set_table(table);
  tv->set_keys(KeysToBytes({0}));
  tv->set_values(FloatsToBytes({grad}));
  tv->add_shape(1);
  tv->set_dtype(v1::DTYPE_FLOAT32);
  return r;
}

inline v1::ClockRequest Tick(uint32_t worker, int64_t clock, bool leaving = false,
                             uint64_t incarnation = 1) {
  v1::ClockRequest r;
  r.set_map_version(1);
  r.set_worker_id(worker);
  r.set_incarnation(incarnation);
  r.set_clock(clock);
  r.set_leaving(leaving);
  return r;
}

// A pull of key 0 of table 0 ("w") and what came back.
struct PullResult {
  bool done = false;
  absl::Status status;
  v1::PullRequest request;
  v1::PullResponse response;
  float value() const {
    float v;
    std::memcpy(&v, response.tables(0).values().data(), sizeof(v));
    return v;
  }
};

// Starts a pull at `clock` (with `after_tick`: sent ahead of the worker's
// tick, PullRequest.after_tick); `out` is filled when the shard answers.
inline void StartPull(Shard& shard, PullResult* out, uint32_t worker, int64_t clock,
                      absl::Time deadline = absl::InfiniteFuture(), bool after_tick = false) {
  out->request.set_after_tick(after_tick);
  out->request.set_map_version(1);
  out->request.set_worker_id(worker);
  out->request.set_incarnation(1);
  out->request.set_clock(clock);
  v1::TableKeys* tk = out->request.add_tables();
  tk->set_table_id(0);
  tk->set_table("w");
  tk->set_keys(KeysToBytes({0}));
  shard.Pull(&out->request, &out->response, deadline, [out](absl::Status s) {
    out->status = s;
    out->done = true;
  });
}

}  // namespace cairn

#endif  // CAIRN_TESTS_SERVER_SHARD_SHARD_TEST_UTIL_H_
