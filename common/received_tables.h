// A message read off gRPC without a copy of its values: it arrives as a
// grpc::ByteBuffer (the slices the transport read into), and
// ReceivedTables::Read parses every field of the message but its tables'
// `values`, which it leaves where they lie, as pieces of those slices. A
// worker reads a pull's answer so (worker/client/pull_reply_reader.h), a
// server a push (server/shard/rpc/parameter_service.h); parsed by
// protobuf, the values would first be copied into the message's `values`
// strings.
//
// The bytes are an ordinary message of proto/cairn/v1/shard.proto whose
// field `tables` is a repeated cairn.v1.TableValues (PullResponse,
// PushRequest).
#ifndef CAIRN_COMMON_RECEIVED_TABLES_H_
#define CAIRN_COMMON_RECEIVED_TABLES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"
#include "common/value_pieces.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace grpc {
class ByteBuffer;
class ProtoBufferReader;
}  // namespace grpc

namespace cairn {

// One received message. Not thread-safe; the pieces stay valid as long as
// this object lives (it holds the slices they point into).
class ReceivedTables {
 public:
  ReceivedTables();
  ~ReceivedTables();
  ReceivedTables(const ReceivedTables&) = delete;
  ReceivedTables& operator=(const ReceivedTables&) = delete;

  // Where gRPC writes the message.
  grpc::ByteBuffer* bytes() { return bytes_.get(); }

  // How Read names and refuses bytes that are not the message.
  struct Refusal {
    absl::string_view what;   // e.g. "the server's PullResponse"
    absl::StatusCode code;    // the error's code
  };

  // Parses bytes() into `message` (cleared first): every field as protobuf
  // would, but the tables (field number `tables_field`, each added with
  // `add_table`) have their `values` left empty; table i's bytes are then
  // values(i). Call once, after the message arrived. An error of
  // `refusal.code`, naming `refusal.what` and the byte where the parse
  // stopped, when the bytes are not such a message.
  absl::Status Read(google::protobuf::MessageLite* message, uint32_t tables_field,
                    absl::FunctionRef<v1::TableValues*()> add_table, const Refusal& refusal);

  // Table i's value pieces (i < the message's number of tables).
  const ValuePieces& values(int i) const { return values_[static_cast<size_t>(i)]; }
  // Every table's, in order.
  absl::Span<const ValuePieces> all_values() const { return values_; }

 private:
  std::unique_ptr<grpc::ByteBuffer> bytes_;
  // Kept, since a reader of a compressed message owns the bytes it
  // decompressed, which the pieces may point into.
  std::unique_ptr<grpc::ProtoBufferReader> reader_;
  std::vector<ValuePieces> values_;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_RECEIVED_TABLES_H_
