// Parsing of the `tables:` entries, their optimizer and init maps, and the
// consistency keys shared by the job level and each table. docs/config.md
// lists every key, its default and its checks.
//
// Thread-safe (pure functions).
#ifndef CAIRN_COMMON_CONFIG_INTERNAL_TABLE_PARSER_H_
#define CAIRN_COMMON_CONFIG_INTERNAL_TABLE_PARSER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cairn/v1/types.pb.h"
#include "common/config/internal/map_reader.h"
#include "common/config/internal/yaml_tree.h"

namespace cairn::config_internal {

// What a table inherits from the job.
struct TableDefaults {
  v1::Consistency consistency = v1::CONSISTENCY_BSP;
  int64_t staleness = 0;
  int64_t request_split_bytes = 1 << 20;  // a chunk or row must fit in one request
};

// Reads `mode_key` (bsp|ssp|asp) and `staleness` from `reader`. A table that
// names no mode inherits `inherited_mode` and `inherited_staleness`;
// `staleness` is required when the mode is set to ssp here and rejected when
// the effective mode is bsp or asp.
absl::Status ParseConsistency(const MapReader& reader, const std::string& mode_key,
                              v1::Consistency inherited_mode, int64_t inherited_staleness,
                              v1::Consistency* mode, int64_t* staleness);

// An `optimizer:` map at `path`: type and learning_rate required; the
// type-specific keys get their defaults (adagrad: initial_accumulator 0.1,
// epsilon 1e-10; adam: beta1 0.9, beta2 0.999, epsilon 1e-8); a key of another
// type is an error.
// The config's name of a wire dtype: "fp32", "bf16" or "fp16".
const char* WireDtypeName(v1::DType d);
// Reads `wire_dtype` (fp32 | bf16 | fp16) into `out`; absent: `out` is kept.
absl::Status ParseWireDtype(const MapReader& r, v1::DType* out);

absl::StatusOr<v1::OptimizerSpec> ParseOptimizer(const YamlNode& node, const std::string& path);

// One entry of `tables:` at `path` ("tables[3]"). The id is left 0.
absl::StatusOr<v1::TableSpec> ParseTable(const YamlNode& node, const std::string& path,
                                         const TableDefaults& defaults);

// "bsp", "ssp", "asp".
const char* ConsistencyName(v1::Consistency mode);

}  // namespace cairn::config_internal

#endif  // CAIRN_COMMON_CONFIG_INTERNAL_TABLE_PARSER_H_
