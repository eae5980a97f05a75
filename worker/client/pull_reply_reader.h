// A pull's answer read off gRPC without a copy of its values: the reply
// arrives as a grpc::ByteBuffer (a list of slices that the transport read
// into), and ReadPullReply parses every field of the cairn.v1.PullResponse
// but each table's `values`, which it leaves where they lie as spans into
// those slices. The caller then copies them once, into its own buffer
// (request_plan.h's ScatterPulled). Parsed by protobuf, the values would
// first be copied into the message's `values` string.
//
// The bytes are an ordinary PullResponse (proto/cairn/v1/shard.proto); the
// server writes them so (server/shard/rpc/pull_reply.h).
#ifndef CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_
#define CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"

namespace grpc {
class ByteBuffer;
class ProtoBufferReader;
}  // namespace grpc

namespace cairn {

// The gRPC method of a pull, called through a generic stub.
inline constexpr char kPullMethod[] = "/cairn.v1.ParameterService/Pull";

// The value bytes of one table of a pull's answer, in order: one or more
// pieces that, concatenated, are its TableValues.values.
using ValuePieces = std::vector<absl::Span<const char>>;

// One received answer. Not thread-safe; the spans in `values` stay valid as
// long as this object lives (it holds the slices they point into).
class ReceivedPull {
 public:
  ReceivedPull();
  ~ReceivedPull();
  ReceivedPull(const ReceivedPull&) = delete;
  ReceivedPull& operator=(const ReceivedPull&) = delete;

  // Where gRPC writes the reply.
  grpc::ByteBuffer* bytes() { return bytes_.get(); }

  // Parses bytes() into `response` (cleared first): every field as protobuf
  // would, but each table's `values` left empty; its bytes are then
  // values(i) for table i. Call once, after the reply arrived.
  // INTERNAL, saying where, when the bytes are not a PullResponse.
  absl::Status Read(v1::PullResponse* response);

  // Table i's value pieces (i < the response's tables_size()).
  const ValuePieces& values(int i) const { return values_[i]; }

 private:
  std::unique_ptr<grpc::ByteBuffer> bytes_;
  // Kept, since a reader of a compressed message owns the bytes it
  // decompressed, which the spans may point into.
  std::unique_ptr<grpc::ProtoBufferReader> reader_;
  std::vector<ValuePieces> values_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_
