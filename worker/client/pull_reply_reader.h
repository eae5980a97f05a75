// A pull's answer read off gRPC without a copy of its values
// (common/received_tables.h): ReceivedPull::Read parses every field of the
// cairn.v1.PullResponse but each table's `values`, which it leaves where
// they lie as pieces of the slices the transport received. The caller then
// copies them once, into its own buffer (request_plan.h's ScatterPulled).
//
// The bytes are an ordinary PullResponse (proto/cairn/v1/shard.proto); the
// server writes them so (server/shard/rpc/pull_reply.h).
#ifndef CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_
#define CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_

#include "absl/status/status.h"
#include "cairn/v1/shard.pb.h"
#include "common/received_tables.h"
#include "common/value_pieces.h"

namespace cairn {

// The gRPC method of a pull, called through a generic stub.
inline constexpr char kPullMethod[] = "/cairn.v1.ParameterService/Pull";

// One received answer. Not thread-safe; the pieces in `values` stay valid as
// long as this object lives (it holds the slices they point into).
class ReceivedPull {
 public:
  // Where gRPC writes the reply.
  grpc::ByteBuffer* bytes() { return received_.bytes(); }

  // Parses bytes() into `response` (cleared first): every field as protobuf
  // would, but each table's `values` left empty; its bytes are then
  // values(i) for table i. Call once, after the reply arrived.
  // INTERNAL, saying where, when the bytes are not a PullResponse.
  absl::Status Read(v1::PullResponse* response);

  // Table i's value pieces (i < the response's tables_size()).
  const ValuePieces& values(int i) const { return received_.values(i); }

 private:
  ReceivedTables received_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_PULL_REPLY_READER_H_
