#include "common/push_payload.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstring>
#include <utility>

#include "common/wire_format.h"

namespace cairn {
namespace {

// Field numbers of proto/cairn/v1/shard.proto.
constexpr uint32_t kPushRequestTables = 5;
constexpr uint32_t kTableValuesValues = 4;

void DropPin(void* pin) { delete static_cast<std::shared_ptr<void>*>(pin); }

}  // namespace

uint64_t PushTablePayload::value_bytes() const {
  uint64_t n = 0;
  for (absl::Span<const char> r : values) n += r.size();
  return n;
}

void PushPayload::AddRange(PushTablePayload* table, absl::Span<const char> bytes) {
  if (bytes.empty()) return;
  if (!table->values.empty()) {
    absl::Span<const char>& last = table->values.back();
    if (last.data() + last.size() == bytes.data()) {
      last = absl::Span<const char>(last.data(), last.size() + bytes.size());
      return;
    }
  }
  table->values.push_back(bytes);
}

void PushPayload::Seal(PushTablePayload* table, size_t max_ranges) {
  if (table->values.size() <= max_ranges) return;
  auto gathered = std::make_unique<std::string>();
  gathered->resize(table->value_bytes());
  char* out = gathered->data();
  for (absl::Span<const char> r : table->values) {
    std::memcpy(out, r.data(), r.size());
    out += r.size();
  }
  table->values = {absl::Span<const char>(gathered->data(), gathered->size())};
  table->gathered = std::move(gathered);
}

v1::PushRequest PushPayload::ToProto() const {
  v1::PushRequest r = header;
  for (const PushTablePayload& t : tables) {
    v1::TableValues* tv = r.add_tables();
    *tv = t.meta;
    std::string* values = tv->mutable_values();
    values->reserve(t.value_bytes());
    for (absl::Span<const char> range : t.values) values->append(range.data(), range.size());
  }
  return r;
}

grpc::ByteBuffer SerializePush(const PushPayload& payload, const std::shared_ptr<void>& pin) {
  std::vector<grpc::Slice> slices;
  // The small fields of the request and of each table go into owned slices;
  // protobuf parses fields in any order, so each table's `values` follows its
  // other fields.
  std::string head = payload.header.SerializeAsString();
  for (const PushTablePayload& t : payload.tables) {
    const std::string meta = t.meta.SerializeAsString();
    const uint64_t value_bytes = t.value_bytes();
    const uint64_t table_bytes =
        meta.size() + LengthPrefixSize(kTableValuesValues, value_bytes) + value_bytes;
    AppendLengthPrefix(kPushRequestTables, table_bytes, &head);
    head += meta;
    AppendLengthPrefix(kTableValuesValues, value_bytes, &head);
    slices.emplace_back(head);
    head.clear();
    for (absl::Span<const char> r : t.values) {
      // The slice's reference to `pin` goes when gRPC releases the slice.
      slices.emplace_back(const_cast<char*>(r.data()), r.size(), &DropPin,
                          new std::shared_ptr<void>(pin));
    }
  }
  if (!head.empty()) slices.emplace_back(head);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace cairn
