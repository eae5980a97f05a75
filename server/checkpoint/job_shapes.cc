#include "server/checkpoint/job_shapes.h"

#include <memory>

#include "common/status_macros.h"
#include "server/optimizer/optimizer.h"

namespace cairn::checkpoint {

absl::StatusOr<std::vector<TableShape>> JobTableShapes(const v1::JobSpec& job) {
  std::vector<TableShape> shapes;
  for (const v1::TableSpec& t : job.tables()) {
    absl::StatusOr<std::unique_ptr<Optimizer>> optimizer = MakeOptimizer(t.optimizer());
    if (!optimizer.ok()) return Annotate(optimizer.status(), "table " + t.name());
    shapes.push_back(ShapeOf(t, (*optimizer)->SlotsPerElement()));
  }
  return shapes;
}

}  // namespace cairn::checkpoint
