#include "server/checkpoint/checkpoint_codec.h"


#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/hash.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/internal/coding.h"

namespace cairn::checkpoint {
namespace {

using internal::Decoder;
using internal::Encoder;

absl::Status Corrupt(const std::string& what, const std::string& detail) {
  return absl::DataLossError(absl::StrCat(what, ": ", detail));
}

absl::Status CheckVersion(Decoder& d, const std::string& what, uint32_t* read = nullptr) {
  uint32_t version = 0;
  if (!d.Get(&version)) return Corrupt(what, "value too short for a format version");
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return Corrupt(what, absl::StrCat("format version ", version, ", this build reads ",
                                      kOldestFormatVersion, " to ", kFormatVersion));
  }
  if (read != nullptr) *read = version;
  return absl::OkStatus();
}

}  // namespace

TableShape ShapeOf(const v1::TableSpec& spec, int slots_per_element) {
  TableShape s;
  s.id = spec.id();
  s.name = spec.name();
  s.kind = spec.kind();
  if (spec.kind() == v1::TABLE_KIND_DENSE) {
    s.shape.assign(spec.shape().begin(), spec.shape().end());
    s.chunk_size = spec.chunk_size();
  } else {
    s.width = spec.width();
  }
  s.slots_per_element = slots_per_element;
  s.partition_offset = spec.kind() == v1::TABLE_KIND_DENSE ? spec.partition_offset() : 0;
  return s;
}

std::string DescribeShape(const TableShape& s) {
  if (s.kind == v1::TABLE_KIND_DENSE) {
    return absl::StrCat("dense [", absl::StrJoin(s.shape, ","), "] chunk_size ", s.chunk_size,
                        " slots ", s.slots_per_element,
                        s.partition_offset == 0
                            ? std::string()
                            : absl::StrCat(" partition_offset ", s.partition_offset));
  }
  return absl::StrCat("sparse width ", s.width, " slots ", s.slots_per_element);
}

uint64_t Checksum(const std::string& bytes) {
  return Xxh64(bytes);
}

std::string EncodeRows(const PartitionRows& rows) {
  Encoder e;
  e.Put<uint32_t>(kFormatVersion);
  e.Put<int32_t>(rows.slots_per_element);
  e.Put<uint64_t>(rows.keys.size());
  e.PutArray(rows.keys);
  e.PutArray(rows.lengths);
  e.PutArray(rows.steps);
  e.Put<uint64_t>(rows.values.size());
  e.PutArray(rows.values);
  e.PutArray(rows.slots);
  e.Put<uint64_t>(rows.pending_keys.size());
  e.PutArray(rows.pending_keys);
  e.PutArray(rows.pending_counts);
  return std::move(e.bytes());
}

absl::StatusOr<PartitionRows> DecodeRows(const std::string& bytes, const std::string& what) {
  Decoder d(bytes);
  uint32_t version = 0;
  if (absl::Status s = CheckVersion(d, what, &version); !s.ok()) return s;
  PartitionRows rows;
  uint64_t n = 0, floats = 0;
  d.Get(&rows.slots_per_element);
  d.Get(&n);
  d.GetArray(n, &rows.keys);
  d.GetArray(n, &rows.lengths);
  d.GetArray(n, &rows.steps);
  d.Get(&floats);
  d.GetArray(floats, &rows.values);
  if (rows.slots_per_element < 0) return Corrupt(what, "negative slot count");
  d.GetArray(floats * static_cast<uint64_t>(rows.slots_per_element), &rows.slots);
  if (version >= 3) {
    uint64_t pending = 0;
    d.Get(&pending);
    d.GetArray(pending, &rows.pending_keys);
    d.GetArray(pending, &rows.pending_counts);
  }
  if (!d.done()) return Corrupt(what, "rows value is truncated or has trailing bytes");
  uint64_t sum = 0;
  for (uint32_t len : rows.lengths) sum += len;
  if (sum != floats) {
    return Corrupt(what, absl::StrCat("row lengths add up to ", sum, ", value holds ", floats));
  }
  for (size_t i = 1; i < rows.pending_keys.size(); ++i) {
    if (rows.pending_keys[i - 1] >= rows.pending_keys[i]) {
      return Corrupt(what, "ids waiting for admission are not ascending");
    }
  }
  return rows;
}

std::string EncodeManifest(const Manifest& m) {
  Encoder e;
  e.Put<uint32_t>(kFormatVersion);
  e.Put(m.id);
  e.Put(m.clock);
  e.Put(m.server_id);
  e.Put(m.num_partitions);
  e.Put(m.unix_millis);
  e.Put<uint32_t>(static_cast<uint32_t>(m.tables.size()));
  for (const TableShape& t : m.tables) {
    e.Put(t.id);
    e.PutString(t.name);
    e.Put(t.kind);
    e.Put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    e.PutArray(t.shape);
    e.Put(t.chunk_size);
    e.Put(t.width);
    e.Put(t.slots_per_element);
    e.Put(t.partition_offset);
  }
  e.Put<uint64_t>(m.partitions.size());
  for (const PartitionEntry& p : m.partitions) {
    e.Put(p.table_id);
    e.Put(p.partition);
    e.Put(p.num_keys);
    e.Put(p.bytes);
    e.Put(p.checksum);
  }
  e.Put(m.workers_checksum);
  // The manifest checks itself: XXH64 of everything before it.
  e.Put<uint64_t>(Checksum(e.bytes()));
  return std::move(e.bytes());
}

absl::StatusOr<Manifest> DecodeManifest(const std::string& bytes, const std::string& what) {
  if (bytes.size() < sizeof(uint64_t)) return Corrupt(what, "manifest too short");
  const std::string body = bytes.substr(0, bytes.size() - sizeof(uint64_t));
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body.size(), sizeof(stored));
  if (Checksum(body) != stored) {
    return Corrupt(what, absl::StrCat("manifest checksum mismatch (stored ", stored,
                                      ", computed ", Checksum(body), ")"));
  }
  Decoder d(body);
  uint32_t version = 0;
  if (absl::Status s = CheckVersion(d, what, &version); !s.ok()) return s;
  Manifest m;
  uint32_t num_tables = 0;
  d.Get(&m.id);
  d.Get(&m.clock);
  d.Get(&m.server_id);
  d.Get(&m.num_partitions);
  d.Get(&m.unix_millis);
  d.Get(&num_tables);
  for (uint32_t i = 0; i < num_tables && d.ok(); ++i) {
    TableShape t;
    uint32_t dims = 0;
    d.Get(&t.id);
    d.GetString(&t.name);
    d.Get(&t.kind);
    d.Get(&dims);
    d.GetArray(dims, &t.shape);
    d.Get(&t.chunk_size);
    d.Get(&t.width);
    d.Get(&t.slots_per_element);
    if (version >= 2) d.Get(&t.partition_offset);
    m.tables.push_back(std::move(t));
  }
  uint64_t num_parts = 0;
  d.Get(&num_parts);
  for (uint64_t i = 0; i < num_parts && d.ok(); ++i) {
    PartitionEntry p;
    d.Get(&p.table_id);
    d.Get(&p.partition);
    d.Get(&p.num_keys);
    d.Get(&p.bytes);
    d.Get(&p.checksum);
    m.partitions.push_back(p);
  }
  d.Get(&m.workers_checksum);
  if (!d.done()) return Corrupt(what, "manifest is truncated or has trailing bytes");
  return m;
}

std::string EncodeWorkers(const WorkerState& w) {
  Encoder e;
  e.Put<uint32_t>(kFormatVersion);
  e.Put<uint32_t>(static_cast<uint32_t>(w.clocks.size()));
  for (const auto& [worker, clock] : w.clocks) {
    e.Put(worker);
    e.Put(clock);
  }
  e.Put<uint32_t>(static_cast<uint32_t>(w.sequence_floors.size()));
  for (const auto& [worker, floor] : w.sequence_floors) {
    e.Put(worker);
    e.Put(floor);
  }
  return std::move(e.bytes());
}

absl::StatusOr<WorkerState> DecodeWorkers(const std::string& bytes, const std::string& what) {
  Decoder d(bytes);
  if (absl::Status s = CheckVersion(d, what); !s.ok()) return s;
  WorkerState w;
  uint32_t n = 0;
  d.Get(&n);
  for (uint32_t i = 0; i < n && d.ok(); ++i) {
    uint32_t worker = 0;
    int64_t clock = 0;
    d.Get(&worker);
    d.Get(&clock);
    w.clocks[worker] = clock;
  }
  d.Get(&n);
  for (uint32_t i = 0; i < n && d.ok(); ++i) {
    uint32_t worker = 0;
    uint64_t floor = 0;
    d.Get(&worker);
    d.Get(&floor);
    w.sequence_floors[worker] = floor;
  }
  if (!d.done()) return Corrupt(what, "worker state is truncated or has trailing bytes");
  return w;
}

}  // namespace cairn::checkpoint
