// A push request whose gradient values stay in the caller's memory until
// gRPC has sent them: the sender serializes the request's small fields and
// hands the values to gRPC as slices that point at the caller's floats, so a
// push copies no value byte in user space on its way out (the kernel's copy
// into the socket is the only one). Workers send their pushes this way, and
// primaries the copies they forward to their backups. The bytes on the wire
// are an ordinary cairn.v1.PushRequest (proto/cairn/v1/shard.proto); a
// server cannot tell them from a request serialized by protobuf.
#ifndef CAIRN_COMMON_PUSH_PAYLOAD_H_
#define CAIRN_COMMON_PUSH_PAYLOAD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "cairn/v1/shard.pb.h"

namespace grpc {
class ByteBuffer;
}  // namespace grpc

namespace cairn {

// One table's part of a push: its fields but `values`, and where the value
// bytes are, in order.
struct PushTablePayload {
  v1::TableValues meta;  // values left empty
  // Ranges of the caller's memory, or of `gathered`; concatenated they are
  // the table's TableValues.values.
  std::vector<absl::Span<const char>> values;
  // Values copied out of the caller's memory when they lie in many small
  // pieces (sparse rows routed to several servers): one copy then beats
  // hundreds of tiny slices on the wire. Empty when nothing was copied.
  std::unique_ptr<std::string> gathered;

  uint64_t value_bytes() const;
};

// Thread-compatible; immutable once built, so a retry sends the same bytes.
// PushRequest.written's count once every value is written.
inline constexpr uint64_t kAllValuesWritten = ~uint64_t{0};

struct PushPayload {
  v1::PushRequest header;  // every field but `tables`
  std::vector<PushTablePayload> tables;
  // A streamed push (Client::GradientStream): the count of its value bytes
  // written so far, all ones once all are; null: all written. While it is
  // not all ones the values may be read only in place, by the server
  // (PushRequest.written).
  const std::atomic<uint64_t>* written = nullptr;

  // Appends `bytes` to `table`'s values: merged with the previous range when
  // adjacent in memory. Call Seal() when every range of the table is in.
  static void AddRange(PushTablePayload* table, absl::Span<const char> bytes);
  // Copies the table's values into `gathered` when they lie in more than
  // `max_ranges` ranges (one slice each on the wire otherwise).
  static void Seal(PushTablePayload* table, size_t max_ranges = 64);

  // The same request as a protobuf message (a copy of every value; for
  // tests and diagnostics).
  v1::PushRequest ToProto() const;
};

// The gRPC method the bytes of SerializePush go to (through a generic stub).
inline constexpr char kPushMethod[] = "/cairn.v1.ParameterService/Push";

// The PushRequest wire bytes of `payload`. Value slices point into the
// payload's ranges and hold a reference to `pin` each: gRPC drops those
// references once it no longer reads the memory (the call ended and the
// transport wrote or discarded the bytes), and only then may the caller's
// memory go. `pin` must keep `payload`'s `gathered` buffers alive.
grpc::ByteBuffer SerializePush(const PushPayload& payload, const std::shared_ptr<void>& pin);

}  // namespace cairn

#endif  // CAIRN_COMMON_PUSH_PAYLOAD_H_
