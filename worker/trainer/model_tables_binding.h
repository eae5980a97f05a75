// Binds the model's parameter tables (common/config/job_config.h
// ModelTables: "mlp.fc<i>.weight" [out, in], "mlp.fc<i>.bias" [out], in
// layer order) to an Mlp's flat parameter vector.
//
// Thread-safe (pure functions).
#ifndef CAIRN_WORKER_TRAINER_MODEL_TABLES_BINDING_H_
#define CAIRN_WORKER_TRAINER_MODEL_TABLES_BINDING_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"
#include "worker/trainer/mlp.h"

namespace cairn {

// One table and where its tensor lives in the flat parameter vector.
struct BoundTable {
  v1::TableSpec spec;
  size_t offset = 0;  // floats
  size_t size = 0;    // floats: the product of spec.shape()
};

// Pairs tables[i] with mlp.tensors()[i]. InvalidArgument naming the table
// when the counts differ, a table is not dense, or a shape differs from the
// model's tensor.
absl::StatusOr<std::vector<BoundTable>> BindModelTables(const Mlp& mlp,
                                                        const std::vector<v1::TableSpec>& tables);

// Writes every table's initial values into its range of `params` with
// InitDenseElements, element 0 upward: exactly the values the servers
// create. params must hold the model's parameter count.
void InitParameters(const std::vector<BoundTable>& tables, absl::Span<float> params);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_MODEL_TABLES_BINDING_H_
