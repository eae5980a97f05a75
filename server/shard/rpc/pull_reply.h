// A pull's answer sent without a copy of its values: the server reads the
// values from its tables straight into one gRPC slice (Shard::Pull with a
// PullReplyArea that allocates), and the answer's bytes are each table's
// small fields followed by its part of that slice, which gRPC sends as it
// is. Otherwise the values were read into the PullResponse message, then
// copied again when gRPC serialized it. The bytes on the wire are an
// ordinary cairn.v1.PullResponse (proto/cairn/v1/shard.proto): a client
// cannot tell them from a message serialized by protobuf.
#ifndef CAIRN_SERVER_SHARD_RPC_PULL_REPLY_H_
#define CAIRN_SERVER_SHARD_RPC_PULL_REPLY_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>

#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"

namespace cairn {

// Where a pull's values are read to before they go on the wire. Not
// thread-safe: one per pull; Allocate is called at most once, on whichever
// thread serves the pull.
class PullReplyBuffer {
 public:
  // Room for `bytes` of values, valid while this buffer lives.
  absl::Span<char> Allocate(uint64_t bytes);
  // Whether Allocate was called (the response's values are in here).
  bool allocated() const { return allocated_; }

  // The PullResponse bytes of `response`: its tables whose values were
  // written here, as SharedRange{offset, length} from the start of this
  // buffer (region 0), carry those bytes as their `values` (and no
  // `shared`); any other table is serialized as it is.
  grpc::ByteBuffer Serialize(const v1::PullResponse& response) const;

 private:
  grpc::Slice values_;
  bool allocated_ = false;
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_RPC_PULL_REPLY_H_
