#include "server/shard/rpc/pull_reply.h"

#include <string>
#include <vector>

#include "common/wire_format.h"

namespace cairn {
namespace {

// Field numbers of proto/cairn/v1/shard.proto.
constexpr uint32_t kPullResponseTables = 1;
constexpr uint32_t kTableValuesValues = 4;

}  // namespace

absl::Span<char> PullReplyBuffer::Allocate(uint64_t bytes) {
  values_ = grpc::Slice(static_cast<size_t>(bytes));
  allocated_ = true;
  return absl::Span<char>(reinterpret_cast<char*>(const_cast<uint8_t*>(values_.begin())),
                          values_.size());
}

grpc::ByteBuffer PullReplyBuffer::Serialize(const v1::PullResponse& response) const {
  std::vector<grpc::Slice> slices;
  std::string head;
  for (const v1::TableValues& table : response.tables()) {
    const bool here = allocated_ && table.has_shared() && table.shared().region() == 0 &&
                      table.values().empty() &&
                      table.shared().offset() + table.shared().length() <= values_.size();
    if (!here) {
      const std::string bytes = table.SerializeAsString();
      AppendLengthPrefix(kPullResponseTables, bytes.size(), &head);
      head += bytes;
      continue;
    }
    v1::TableValues meta = table;
    meta.clear_shared();
    const std::string fields = meta.SerializeAsString();
    const uint64_t length = table.shared().length();
    AppendLengthPrefix(kPullResponseTables,
                       fields.size() + LengthPrefixSize(kTableValuesValues, length) + length,
                       &head);
    head += fields;
    AppendLengthPrefix(kTableValuesValues, length, &head);
    slices.emplace_back(head);
    head.clear();
    if (length > 0) {
      const size_t begin = static_cast<size_t>(table.shared().offset());
      slices.push_back(values_.sub(begin, begin + static_cast<size_t>(length)));
    }
  }
  // The fields after `tables` (min_clock).
  v1::PullResponse rest = response;
  rest.clear_tables();
  head += rest.SerializeAsString();
  if (!head.empty() || slices.empty()) slices.emplace_back(head);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace cairn
