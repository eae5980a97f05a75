// How `cairnctl status` prints a ClusterStatus: JSON for scripts, aligned
// text for people. Both are pure functions of the status.
//
// JSON (`--json`), one object:
//   {
//     "coordinator": {"address": "127.0.0.1:7070"},
//     "members": [{"role": "server", "id": 0, "state": "alive",
//                  "address": "127.0.0.1:7071", "metrics_address": "127.0.0.1:9101",
//                  "lease_age_ms": 120}, ...
//                 {"role": "worker", "id": 0, ..., "start_clock": 0}, ...],
//     "partition_map": {"version": 3, "num_partitions": 16, "ready": true,
//                       "partitions": [{"partition": 0, "primary": 0, "backups": []}, ...]},
//     "tables": [{"table": "emb", "min_clock": 12, "max_clock": 13,
//                 "num_keys": 1000, "bytes": 16000, "servers": 2}, ...],
//     "servers": [{"id": 0, "address": "...", "ok": true, "map_version": 3,
//                  "partitions": [0, 2, ...], "pushes_applied": 40, "pulls_served": 40},
//                 {"id": 2, ..., "busy": "snapshot"},  (a long operation holds it)
//                 {"id": 1, "address": "...", "ok": false, "error": "..."}]
//   }
// Members are sorted by role (servers first), then id; partitions by number;
// tables by name; servers by id. A clock of -1 means no live worker.
#ifndef CAIRN_TOOLS_CTL_STATUS_FORMAT_H_
#define CAIRN_TOOLS_CTL_STATUS_FORMAT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "tools/ctl/cluster_status.h"

namespace cairn::ctl {

nlohmann::json StatusToJson(const ClusterStatus& status);

// Sections MEMBERS, PARTITION MAP (runs of consecutive partitions with the same
// primary and backups on one line, e.g. "0-7  0  -"), TABLES and SERVERS, each
// a header line and left-aligned columns separated by two spaces.
std::string StatusToText(const ClusterStatus& status);

}  // namespace cairn::ctl

#endif  // CAIRN_TOOLS_CTL_STATUS_FORMAT_H_
