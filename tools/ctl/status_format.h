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
//                 "num_keys": 1000, "bytes": 16000, "held_keys": 2000,
//                 "held_bytes": 32000, "pending_ids": 0, "not_admitted_pushes": 0,
//                 "evicted_rows": 0, "expired_rows": 0, "servers": 2}, ...],
//     (num_keys and bytes count each key once; held_ every copy, a primary's
//     and its backups')
//     "servers": [{"id": 0, "address": "...", "ok": true, "map_version": 3,
//                  "partitions": [0, 2, ...], "pushes_applied": 40, "pulls_served": 40},
//                 {"id": 2, ..., "busy": "snapshot"},  (a long operation holds it)
//                 {"id": 1, "address": "...", "ok": false, "error": "..."}]
//   }
// Members are sorted by role (servers first), then id; partitions by number;
// tables in the job's order (table id); servers by id. A clock of -1 means
// no live worker.
#ifndef CAIRN_TOOLS_CTL_STATUS_FORMAT_H_
#define CAIRN_TOOLS_CTL_STATUS_FORMAT_H_

#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/ctl/cluster_status.h"

namespace cairn::ctl {

nlohmann::json StatusToJson(const ClusterStatus& status);

// `rows` (the first a header) as left-aligned columns two spaces apart, one
// line each, no trailing blanks; `cairnctl status` and `checkpoints` print
// their tables with it.
std::string Columns(const std::vector<std::vector<std::string>>& rows);

// Sections MEMBERS, PARTITION MAP (one line per primary and backups, listing
// their partitions with CompactList, e.g. "0,2,...,62  0  1"), TABLES (KEYS
// and BYTES each key once, COPIES how many times the servers hold them) and
// SERVERS (BYTES: every copy the server holds), each a header line and
// left-aligned columns separated by two spaces.
std::string StatusToText(const ClusterStatus& status);

// `values` sorted, with runs of consecutive numbers as "first-last" and runs
// of four or more with one larger step as "a,b,...,last": {0, 1, 2, 5} ->
// "0-2,5"; {0, 2, 4, 6, 8} -> "0,2,...,8"; {1, 4, 9} -> "1,4,9".
std::string CompactList(std::vector<uint32_t> values);

}  // namespace cairn::ctl

#endif  // CAIRN_TOOLS_CTL_STATUS_FORMAT_H_
