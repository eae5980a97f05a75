// Protocol-buffer framing written by hand where a message's large `bytes`
// field travels as gRPC slices of its own, not copied into the message: a
// push's gradients from the worker's memory (common/push_payload.h),
// a pull's answer from the server's reply buffer
// (server/shard/rpc/pull_reply.h). The rest of such a message is serialized
// by protobuf, and protobuf parses fields in any order, so the bytes are an
// ordinary message to whoever reads them.
//
// Thread-safe (pure functions).
#ifndef CAIRN_COMMON_WIRE_FORMAT_H_
#define CAIRN_COMMON_WIRE_FORMAT_H_

#include <google/protobuf/io/coded_stream.h>

#include <cstdint>
#include <string>

namespace cairn {

// Appends the key of length-delimited field `field` (wire type 2) and the
// varint `length` that follows it; the field's `length` bytes come next.
inline void AppendLengthPrefix(uint32_t field, uint64_t length, std::string* out) {
  using google::protobuf::io::CodedOutputStream;
  uint8_t buf[2 * 10];
  uint8_t* p = CodedOutputStream::WriteVarint32ToArray((field << 3) | 2, buf);
  p = CodedOutputStream::WriteVarint64ToArray(length, p);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(p - buf));
}

// Bytes AppendLengthPrefix writes for `field` and `length`.
inline uint64_t LengthPrefixSize(uint32_t field, uint64_t length) {
  using google::protobuf::io::CodedOutputStream;
  return CodedOutputStream::VarintSize32((field << 3) | 2) +
         CodedOutputStream::VarintSize64(length);
}

}  // namespace cairn

#endif  // CAIRN_COMMON_WIRE_FORMAT_H_
