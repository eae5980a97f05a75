#include "worker/client/request_plan.h"

#include <cstring>
#include <map>
#include <string>

#include "common/wire_dtype.h"

namespace cairn {
namespace {

// Value bytes of one index: what the split counts (keys are 8 bytes per
// 64 KiB chunk or per row; counting them would push a 1 MiB table into a
// second request).
uint64_t EntryBytes(const TableInput& in, uint32_t index) {
  return FloatsOf(in, index) * WireBytes(WireDtypeOrFloat32(in.spec->wire_dtype()));
}

// The length of the run of consecutive indices starting at indices[at]
// (at least 1): their values lie one after the other in the caller's
// buffer, and a sparse input's keys too.
size_t RunAt(const std::vector<uint32_t>& indices, size_t at) {
  size_t end = at + 1;
  while (end < indices.size() && indices[end] == indices[end - 1] + 1) ++end;
  return end - at;
}

// Writes the keys of `indices` of `in` into a message (little-endian uint64),
// a run of a sparse input's keys with one copy.
void EncodeKeys(const TableInput& in, const std::vector<uint32_t>& indices, std::string* keys) {
  keys->resize(indices.size() * sizeof(Key));
  char* out = keys->data();
  for (size_t at = 0; at < indices.size();) {
    const size_t run = in.keys == nullptr ? 1 : RunAt(indices, at);
    if (in.keys != nullptr) {
      std::memcpy(out, in.keys + indices[at], run * sizeof(Key));
    } else {
      const Key k = KeyOf(in, indices[at]);
      std::memcpy(out, &k, sizeof(k));
    }
    out += run * sizeof(Key);
    at += run;
  }
}

// Adds input `i`'s indices (all, or those of `subset`, ascending for a dense
// input) to their groups in `routed`.
void Route(absl::Span<const TableInput> inputs, size_t i, const Router& router,
           const std::vector<uint32_t>* subset, std::map<uint32_t, InputIndices>* routed) {
  const TableInput& in = inputs[i];
  if (in.keys == nullptr) {
    for (auto& [group, chunks] : router.RouteDense(in.num_chunks, in.spec->partition_offset())) {
      std::vector<uint32_t> idx;
      for (Key c : chunks) {
        if (subset == nullptr || std::binary_search(subset->begin(), subset->end(), c)) {
          idx.push_back(static_cast<uint32_t>(c));
        }
      }
      if (!idx.empty()) (*routed)[group].emplace_back(i, std::move(idx));
    }
  } else if (subset == nullptr) {
    for (auto& [group, idx] : router.RouteSparse(in.keys, in.n)) {
      (*routed)[group].emplace_back(i, std::move(idx));
    }
  } else {
    std::vector<Key> keys;
    keys.reserve(subset->size());
    for (uint32_t j : *subset) keys.push_back(in.keys[j]);
    for (auto& [group, local] : router.RouteSparse(keys.data(), keys.size())) {
      std::vector<uint32_t> idx;
      idx.reserve(local.size());
      for (uint32_t l : local) idx.push_back((*subset)[l]);
      (*routed)[group].emplace_back(i, std::move(idx));
    }
  }
}

}  // namespace

std::vector<PlannedRequest> PlanRequests(absl::Span<const TableInput> inputs,
                                         const Router& router, const InputIndices* only,
                                         uint64_t split_bytes) {
  return PlanRequests(inputs, router, only, [split_bytes](uint32_t) { return split_bytes; });
}

std::vector<PlannedRequest> PlanRequests(absl::Span<const TableInput> inputs,
                                         const Router& router, const InputIndices* only,
                                         absl::FunctionRef<uint64_t(uint32_t group)> split_of) {
  std::map<uint32_t, InputIndices> routed;  // group -> its share, in input order
  if (only == nullptr) {
    for (size_t i = 0; i < inputs.size(); ++i) Route(inputs, i, router, nullptr, &routed);
  } else {
    for (const auto& [i, idx] : *only) {
      std::vector<uint32_t> sorted = idx;
      if (inputs[i].keys == nullptr) std::sort(sorted.begin(), sorted.end());
      Route(inputs, i, router, &sorted, &routed);
    }
  }

  std::vector<PlannedRequest> requests;
  for (auto& [group, entries] : routed) {
    PlannedRequest request{group, {}};
    const uint64_t split_bytes = split_of(group);
    uint64_t bytes = 0;
    for (auto& [input, idx] : entries) {
      // A sparse input's rows all have one size: when they all fit, they
      // go whole, not index by index.
      if (inputs[input].keys != nullptr && !idx.empty()) {
        const uint64_t all = idx.size() * EntryBytes(inputs[input], idx.front());
        if (bytes + all <= split_bytes) {
          request.entries.emplace_back(input, std::move(idx));
          bytes += all;
          continue;
        }
      }
      std::vector<uint32_t> part;
      for (uint32_t j : idx) {
        const uint64_t b = EntryBytes(inputs[input], j);
        if (bytes + b > split_bytes && bytes > 0) {
          if (!part.empty()) request.entries.emplace_back(input, std::move(part));
          part.clear();
          requests.push_back(std::move(request));
          request = PlannedRequest{group, {}};
          bytes = 0;
        }
        part.push_back(j);
        bytes += b;
      }
      if (!part.empty()) request.entries.emplace_back(input, std::move(part));
    }
    if (!request.entries.empty()) requests.push_back(std::move(request));
  }
  return requests;
}

std::shared_ptr<PushPayload> BuildPushRequest(absl::Span<const TableInput> inputs,
                                              const PlannedRequest& request,
                                              const RequestIdentity& identity, uint64_t sequence) {
  auto payload = std::make_shared<PushPayload>();
  v1::PushRequest& r = payload->header;
  r.set_worker_id(identity.worker_id);
  r.set_incarnation(identity.incarnation);
  r.set_clock(identity.clock);
  r.set_group(request.group);
  r.set_sequence(sequence);
  for (const auto& [input, idx] : request.entries) {
    const TableInput& in = inputs[input];
    PushTablePayload& table = payload->tables.emplace_back();
    v1::TableValues* tv = &table.meta;
    tv->set_table_id(in.spec->id());
    tv->set_table(in.spec->name());
    const v1::DType wire = WireDtypeOrFloat32(in.spec->wire_dtype());
    tv->set_dtype(wire);
    if (in.keys != nullptr) {
      tv->add_shape(static_cast<int64_t>(idx.size()));
      tv->add_shape(in.spec->width());
    } else if (!in.shape.empty()) {
      for (int64_t d : in.shape) tv->add_shape(d);
    } else {
      for (int64_t d : in.spec->shape()) tv->add_shape(d);
    }
    EncodeKeys(in, idx, tv->mutable_keys());
    if (wire == v1::DTYPE_FLOAT32) {
      // A run of consecutive indices is one range of the caller's memory.
      for (size_t at = 0; at < idx.size();) {
        const size_t run = RunAt(idx, at);
        const uint32_t first = idx[at], last = idx[at + run - 1];
        const uint64_t floats = OffsetOf(in, last) + FloatsOf(in, last) - OffsetOf(in, first);
        PushPayload::AddRange(
            &table, absl::MakeConstSpan(reinterpret_cast<const char*>(in.in + OffsetOf(in, first)),
                                        floats * sizeof(float)));
        at += run;
      }
      PushPayload::Seal(&table);
    } else {
      // Narrowed to 16 bits: the conversion writes the only copy.
      uint64_t floats = 0;
      for (uint32_t j : idx) floats += FloatsOf(in, j);
      table.gathered = std::make_unique<std::string>(floats * WireBytes(wire), '\0');
      char* out = table.gathered->data();
      for (uint32_t j : idx) {
        EncodeValues(in.in + OffsetOf(in, j), FloatsOf(in, j), wire, out);
        out += FloatsOf(in, j) * WireBytes(wire);
      }
      table.values = {absl::MakeConstSpan(table.gathered->data(), table.gathered->size())};
    }
  }
  return payload;
}

uint64_t BuildPullRequest(absl::Span<const TableInput> inputs, const InputIndices& entries,
                          const RequestIdentity& identity, uint64_t map_version,
                          v1::PullRequest* out) {
  out->set_map_version(map_version);
  out->set_worker_id(identity.worker_id);
  out->set_incarnation(identity.incarnation);
  out->set_clock(identity.clock);
  uint64_t reply_bytes = 0;
  for (const auto& [input, idx] : entries) {
    const TableInput& in = inputs[input];
    v1::TableKeys* tk = out->add_tables();
    tk->set_table_id(in.spec->id());
    tk->set_table(in.spec->name());
    tk->set_dtype(WireDtypeOrFloat32(in.spec->wire_dtype()));
    EncodeKeys(in, idx, tk->mutable_keys());
    for (uint32_t j : idx) reply_bytes += EntryBytes(in, j);
  }
  return reply_bytes;
}

char* ContiguousDestination(absl::Span<const TableInput> inputs, const InputIndices& entries,
                            uint64_t reply_bytes) {
  float* first = nullptr;
  float* next = nullptr;
  for (const auto& [input, indices] : entries) {
    const TableInput& in = inputs[input];
    if (WireDtypeOrFloat32(in.spec->wire_dtype()) != v1::DTYPE_FLOAT32) return nullptr;
    for (uint32_t j : indices) {
      float* at = in.out + OffsetOf(in, j);
      if (next != nullptr && at != next) return nullptr;
      if (first == nullptr) first = at;
      next = at + FloatsOf(in, j);
    }
  }
  if (first == nullptr || static_cast<uint64_t>(next - first) * sizeof(float) != reply_bytes) {
    return nullptr;
  }
  return reinterpret_cast<char*>(first);
}

bool ScatterPulled(const TableInput& in, const std::vector<uint32_t>& indices, v1::DType dtype,
                   absl::Span<const absl::Span<const char>> values) {
  dtype = WireDtypeOrFloat32(dtype);
  if (!IsWireDtype(dtype)) return false;
  const size_t value_bytes = WireBytes(dtype);
  size_t piece = 0;
  const char* src = values.empty() ? nullptr : values[0].data();
  const char* end = values.empty() ? nullptr : src + values[0].size();
  // Moves to the next piece with bytes in it; false when none is left.
  auto next_piece = [&] {
    while (src == end) {
      if (++piece >= values.size()) return false;
      src = values[piece].data();
      end = src + values[piece].size();
    }
    return true;
  };
  for (uint32_t j : indices) {
    size_t floats = FloatsOf(in, j);
    float* out = in.out + OffsetOf(in, j);
    if (floats == 0) continue;
    if (!next_piece()) return false;
    // The usual case: the whole row or chunk within one piece.
    if (static_cast<size_t>(end - src) >= floats * value_bytes) {
      // Answered in place (float32 where it belongs): nothing to copy.
      if (src != reinterpret_cast<const char*>(out) || dtype != v1::DTYPE_FLOAT32) {
        DecodeValues(src, floats, dtype, out);
      }
      src += floats * value_bytes;
      continue;
    }
    while (floats > 0) {
      if (!next_piece()) return false;
      const size_t whole = std::min(floats, static_cast<size_t>(end - src) / value_bytes);
      if (whole > 0) {
        DecodeValues(src, whole, dtype, out);
        src += whole * value_bytes;
        out += whole;
        floats -= whole;
        continue;
      }
      // A value cut between two pieces.
      char value[sizeof(float)];
      for (size_t b = 0; b < value_bytes; ++b) {
        if (!next_piece()) return false;
        value[b] = *src++;
      }
      DecodeValues(value, 1, dtype, out);
      ++out;
      --floats;
    }
  }
  // Nothing may be left over.
  return !next_piece();
}

}  // namespace cairn
